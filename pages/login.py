"""Sign in."""

from __future__ import annotations

import logging

import streamlit as st

from deid_core.store.users import authenticate
from deid_core.ui.auth import start_session
from deid_core.ui.resources import engine
from deid_core.ui.session import take_flash

log = logging.getLogger("deid_core.ui.login")

st.title("deid-workbench")
st.caption("Human-in-the-loop de-identification of clinical notes")
for _kind, message in take_flash(st.session_state):
    st.info(message)

with st.form("login", border=True):
    username = st.text_input("Username", key="login_username")
    password = st.text_input("Password", type="password", key="login_password")
    submitted = st.form_submit_button("Sign in", type="primary")

if submitted:
    info = authenticate(engine(), username.strip(), password)
    if info is None:
        log.info("failed sign-in")
        st.error("Wrong username or password, or the account is deactivated.")
    else:
        start_session(st.session_state, info.username, info.role)
        log.info("user %s signed in", info.username)
        st.rerun()
