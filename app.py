"""deid-workbench: the Streamlit frame. Login gate, then the pages the user's role may open."""

from __future__ import annotations

import streamlit as st

from deid_core.store.repository import list_projects
from deid_core.ui.auth import authorise, end_session
from deid_core.ui.boundary import install as install_error_boundary
from deid_core.ui.component import session_cookie
from deid_core.ui.resources import engine, session_cookie_value
from deid_core.ui.safe_text import md
from deid_core.ui.session import can_open

st.set_page_config(page_title="deid-workbench", page_icon="🛡️", layout="wide")
# Uncaught page exceptions are shown and logged by code, class and safe fields only.
install_error_boundary()

# engine() upgrades the schema and creates the first admin before anyone signs in.
# authorise: a reload resumes from the signed cookie; the role comes from the database.
user = authorise(st.session_state, engine(), session_cookie_value())

if user is None:
    nav = st.navigation([st.Page("pages/login.py", title="Sign in", icon=":material/login:")])
    session_cookie(st.session_state)
else:
    reviewer_pages = [
        st.Page("pages/queue.py", title="Queue", icon=":material/list:", default=True),
        st.Page("pages/review.py", title="Review", icon=":material/edit_note:"),
        st.Page("pages/account.py", title="Account", icon=":material/person:"),
    ]
    admin_pages = [
        st.Page("pages/bias.py", title="Bias", icon=":material/tune:"),
        st.Page("pages/model.py", title="Model", icon=":material/model_training:"),
        st.Page("pages/import.py", title="Import", icon=":material/upload_file:"),
        st.Page("pages/users.py", title="Users", icon=":material/group:"),
        st.Page("pages/export.py", title="Export", icon=":material/download:"),
    ]
    sections = {"Review": reviewer_pages}
    allowed_admin = [p for p in admin_pages if can_open(user, p.url_path)]
    if allowed_admin:
        sections["Admin"] = allowed_admin
    nav = st.navigation(sections)
    with st.sidebar:
        st.caption(f"Signed in as **{md(user.username)}** ({user.role})")
        projects = [p.name for p in list_projects(engine())]
        if projects:
            current = st.session_state.get("project")
            index = projects.index(current) if current in projects else 0
            # The widget has its own key: "project" must stay writable (sign-out resets it).
            st.session_state["project"] = st.selectbox(
                "Project", projects, index=index, key="project_select"
            )
        st.button("Sign out", icon=":material/logout:", key="sign_out",
                  on_click=end_session, args=(st.session_state, "Signed out."))
        session_cookie(st.session_state)

nav.run()
