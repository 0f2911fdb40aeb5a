"""The app's error boundary: an uncaught page exception is shown and logged without its text.

Streamlit's own handler logs the exception with its message and shows the
message and traceback in the browser; a page's exception text can quote
note text or SQL parameters. Streamlit runs a page either inside the entry
script's ``nav.run()`` or, on reruns, directly, so a ``try`` in ``app.py``
does not see every exception. ``install()`` replaces the handler Streamlit
calls for uncaught script and fragment exceptions (the same function in
``streamlit.runtime.scriptrunner.exec_code`` and ``streamlit.runtime.fragment``)
with one that shows ``error: [CODE] Class: safe message`` and logs the same
line through ``deid_core.cli.errors.report``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from deid_core.cli.errors import report
from deid_core.ui.safe_text import md

_MODULES = ("streamlit.runtime.scriptrunner.exec_code", "streamlit.runtime.fragment")


def show_safely(ex: BaseException, _on_script_error: Callable[..., Any] | None = None) -> None:
    import streamlit as st

    safe = report(ex)  # logs the safe line only
    st.error(md(safe.line()), icon=":material/error:")


def install() -> bool:
    """Replace Streamlit's uncaught-exception handler; True if every hook was found."""
    found = True
    for name in _MODULES:
        module = importlib.import_module(name)
        if hasattr(module, "handle_user_script_exception"):
            module.handle_user_script_exception = show_safely
        else:  # a Streamlit version without this hook: the page tests below would catch it
            found = False
    return found
