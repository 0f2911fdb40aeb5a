"""Users (admin): create, deactivate, reactivate, change role, reset password."""

from __future__ import annotations

import secrets

import pandas as pd
import streamlit as st

from deid_core.errors import DeidError
from deid_core.store.users import (
    create_user,
    list_users,
    reset_password,
    set_active,
    set_role,
)
from deid_core.ui.resources import guard
from deid_core.ui.safe_text import md

ctx = guard("users")
st.title("Users")

users = list_users(ctx.engine)
st.dataframe(
    pd.DataFrame(
        [{"username": u.username, "role": u.role, "active": u.active,
          "created": u.created_at, "deactivated": u.deactivated_at} for u in users]
    ),
    hide_index=True,
    width="stretch",
    placeholder="",
)
st.caption("Deactivating keeps every annotation, review and audit event of the user.")

left, right = st.columns(2)
with left, st.form("create_user", clear_on_submit=True):
    st.subheader("Create a user")
    name = st.text_input("Username", key="new_username")
    role = st.selectbox("Role", ["reviewer", "admin"], key="new_role")
    password = st.text_input("Password (empty: generate one)", type="password", key="new_password")
    if st.form_submit_button("Create", type="primary"):
        chosen = password or secrets.token_urlsafe(12)
        try:
            create_user(ctx.engine, name.strip(), chosen, role=role, actor=ctx.user.username)
        except DeidError as exc:
            st.error(md(exc))
        else:
            st.success(f"Created {md(name.strip())} ({role}).")
            if not password:
                st.code(chosen, language=None)
                st.caption("Generated password: shown once, pass it on securely.")

with right:
    st.subheader("Change a user")
    names = [u.username for u in users]
    target = st.selectbox("User", names, key="edit_user") if names else None
    if target is not None:
        info = next(u for u in users if u.username == target)
        c1, c2 = st.columns(2)
        if info.active:
            if c1.button("Deactivate", disabled=target == ctx.user.username, key="deactivate"):
                set_active(ctx.engine, target, False, actor=ctx.user.username)
                st.rerun()
        elif c1.button("Reactivate", key="reactivate"):
            set_active(ctx.engine, target, True, actor=ctx.user.username)
            st.rerun()
        other = "admin" if info.role == "reviewer" else "reviewer"
        if c2.button(f"Make {other}", disabled=target == ctx.user.username, key="set_role"):
            set_role(ctx.engine, target, other, actor=ctx.user.username)
            st.rerun()
        if st.button("Reset password", key="reset_password"):
            fresh = secrets.token_urlsafe(12)
            try:
                reset_password(ctx.engine, target, fresh, actor=ctx.user.username)
            except DeidError as exc:
                st.error(md(exc))
            else:
                st.success(f"New password for {md(target)} (shown once):")
                st.code(fresh, language=None)
