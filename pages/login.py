"""Sign in."""

from __future__ import annotations

import streamlit as st

from deid_core.errors import TooManyAttempts
from deid_core.store.throttle import sign_in as throttled_sign_in
from deid_core.ui.auth import start_session
from deid_core.ui.resources import engine
from deid_core.ui.safe_text import md
from deid_core.ui.session import take_flash

st.title("deid-workbench")
st.caption("Human-in-the-loop de-identification of clinical notes")
for _kind, message in take_flash(st.session_state):
    st.info(message)

with st.form("login", border=True):
    username = st.text_input("Username", key="login_username")
    password = st.text_input("Password", type="password", key="login_password")
    submitted = st.form_submit_button("Sign in", type="primary")

if submitted:
    try:
        # Throttled per username and per client; the store logs the username, never the password.
        info = throttled_sign_in(engine(), username.strip(), password,
                                 client=st.context.ip_address or "unknown")
    except TooManyAttempts as exc:
        st.error(f"Not signed in: {md(exc)}.")
    else:
        if info is None:
            st.error("Wrong username or password, or the account is deactivated.")
        else:
            start_session(st.session_state, info.username, info.role)
            st.rerun()
