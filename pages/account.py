"""Account: change one's own password."""

from __future__ import annotations

import streamlit as st

from deid_core.errors import DeidError
from deid_core.store.users import authenticate, reset_password
from deid_core.ui.resources import guard
from deid_core.ui.safe_text import md
from deid_core.ui.session import sign_out

ctx = guard("account")
st.title("Account")
st.write(f"Signed in as **{md(ctx.user.username)}** with the role **{ctx.user.role}**.")
unsaved = sum(1 for d in st.session_state["drafts"].values() if d.dirty)
if unsaved:
    st.warning(f"{unsaved} note(s) hold unsaved edits; signing out discards them.")
st.button("Sign out", key="account_sign_out", on_click=sign_out,
          args=(st.session_state, "Signed out."))

with st.form("change_password", clear_on_submit=True):
    old = st.text_input("Current password", type="password", key="old_password")
    new = st.text_input("New password (8 characters or more)", type="password", key="new_password")
    again = st.text_input("New password again", type="password", key="new_password_again")
    if st.form_submit_button("Change password", type="primary"):
        if new != again:
            st.error("The two new passwords differ.")
        elif authenticate(ctx.engine, ctx.user.username, old) is None:
            st.error("The current password is wrong.")
        else:
            try:
                reset_password(ctx.engine, ctx.user.username, new, actor=ctx.user.username)
            except DeidError as exc:
                st.error(str(exc))
            else:
                st.success("Password changed.")
