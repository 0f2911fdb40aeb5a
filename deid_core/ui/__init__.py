"""Logic behind the Streamlit pages, kept here so that it can be tested without a browser."""
