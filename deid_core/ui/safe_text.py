"""User-supplied strings shown through Streamlit's markdown, made inert.

``st.title``, ``st.write``, ``st.caption``, ``st.error`` and friends render
markdown: a document id or patient id holding ``![p](http://host/x)`` made the
browser fetch that URL from the Review page title. Every id, name, path and
error message from user data goes through ``md`` before it reaches them
(or is shown with ``st.text`` / ``st.code``, which render nothing).
"""

from __future__ import annotations

import html
import re

#: Inline markdown (CommonMark + GFM + Streamlit's ``:colour[...]`` and ``$math$``) punctuation.
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()!|~$<>&])")
#: Block syntax that only counts at the start of a line: heading, list, quote, numbered list.
_BLOCK_START = re.compile(r"^(?:([#>+\-])|(\d+)([.)]))")


def md(value: object) -> str:
    """``value`` as literal text inside markdown: punctuation escaped, HTML inert, one line."""
    text = " ".join(str(value).split())  # no newline can start a heading, list or table
    text = _MD_SPECIAL.sub(lambda m: html.escape(m.group(1)) if m.group(1) in "<>&"
                           else "\\" + m.group(1), text)
    return _BLOCK_START.sub(
        lambda m: "\\" + m.group(1) if m.group(1) else f"{m.group(2)}\\{m.group(3)}", text)
