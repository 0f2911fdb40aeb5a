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

#: Markdown (CommonMark + GFM + Streamlit's ``:colour[...]``, ``$math$``) punctuation.
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|~$:<>&\"'])")


def md(value: object) -> str:
    """``value`` as literal text inside markdown: punctuation escaped, HTML inert, one line."""
    text = " ".join(str(value).split())  # no newline can start a heading, list or table
    return _MD_SPECIAL.sub(lambda m: html.escape(m.group(1)) if m.group(1) in "<>&\"'"
                           else "\\" + m.group(1), text)
