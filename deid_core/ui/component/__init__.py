"""The review editor: a Streamlit inline component (components v2, no build step).

The browser holds the note's spans and applies every edit locally (no
Streamlit rerun per edit); it draws the note with ``textContent`` only. It
sends the whole layer back as a trigger value only to sync: ``draft``
(autosave, a moment after the last edit), ``accept``, ``save``, ``skip`` and
``back``. Python checks that layer with
:func:`deid_core.ui.editing.layer_from_browser` (token boundaries, labels, no
overlaps, provenance from the server) before anything is stored.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from deid_core.spans import Span
from deid_core.ui.render import (
    DEFAULT_UNCERTAIN_BELOW,
    label_colours,
    safe_colour,
    text_colour,
)

COMPONENT_NAME = "deid_review_editor"
_HERE = Path(__file__).parent
_renderer: Any = None


def _assets() -> tuple[str, str]:
    return (_HERE / "review.js").read_text("utf-8"), (_HERE / "review.css").read_text("utf-8")


def editor_payload(
    *,
    doc_id: str,
    rev: int | str,
    text: str,
    spans: Sequence[Span],
    labels: Sequence[str],
    colours: Mapping[str, str],
    near_misses: Sequence[Span] = (),
    uncertain_below: float = DEFAULT_UNCERTAIN_BELOW,
    readonly: bool = False,
    tokens: Sequence[tuple[int, int]] = (),
    origin: Sequence[Span] | None = None,
    known: Sequence[tuple[str, str]] = (),
    numeric: Sequence[tuple[int, int]] = (),
    ahead: Sequence[dict[str, Any]] = (),
    ack: Any = None,
    base: str = "",
    user: str = "",
    progress: str = "",
    focus: bool = True,
    focus_offset: int | None = None,
) -> dict[str, Any]:
    """Everything the browser needs to edit the note on its own, as JSON.

    ``rev`` changes whenever the server changes the layer behind the editor's
    back (a loaded draft, an apply-to-all, a conflict resolved, a new bias on an
    untouched note): the browser then drops its local copy for the server's.
    ``base`` names the stored version the edits start from (localStorage drafts
    of another version are dropped). ``known`` holds (text, label) pairs that
    are PHI in this patient's other notes; the browser marks their unmarked
    occurrences, and those of this note's own spans, as possible misses;
    ``numeric`` names digit tokens inside a range or a lab value ("98-107",
    "120/80"), where an all-digit possible miss is noise and is not shown.

    ``ahead`` holds the payloads of the notes claimed next for this reviewer:
    on Accept or Skip the browser shows the first at once and sends the
    decision with ``shown``; the server's next run saves it and sends that note
    as the open one, which the browser adopts without touching edits made in
    the meantime. ``ack`` is the sequence number of the last browser action the
    server handled: the browser sends its next action only after that one's
    run, so no action interrupts (and loses) another.
    """
    palette = {name: safe_colour(c) for name, c in colours.items()}
    palette.update(label_colours([s.label for s in spans if s.label not in palette], None))

    def span_json(s: Span) -> dict[str, Any]:
        return {"s": s.start, "e": s.end, "l": s.label, "src": s.source, "sc": round(float(s.score), 4)}

    return {
        "doc_id": doc_id,
        "rev": str(rev),
        "base": base,
        "user": user,
        "readonly": readonly,
        "focus": focus,
        "text": text,
        "tokens": [[int(a), int(b)] for a, b in tokens],
        "labels": [
            {"name": name, "c": palette.get(name, "#999999"), "fg": text_colour(palette.get(name, "#999999"))}
            for name in labels
        ],
        "spans": [span_json(s) for s in spans],
        "origin": [span_json(s) for s in (spans if origin is None else origin)],
        "near": [span_json(s) for s in near_misses],
        "known": [{"t": t, "l": lab} for t, lab in known],
        "numeric": [[int(a), int(b)] for a, b in numeric],
        "next": list(ahead),
        "ack": ack,
        "uncertain_below": float(uncertain_below),
        "progress": progress,
        "focus_offset": focus_offset,
    }


def review_editor(payload: dict[str, Any], *, key: str = "review_editor") -> dict[str, Any] | None:
    """Mount the editor; returns the sync action the browser just sent, or ``None``."""
    global _renderer
    import streamlit as st

    if _renderer is None:
        js, css = _assets()
        _renderer = st.components.v2.component(
            COMPONENT_NAME, html="", css=css, js=js, isolate_styles=False
        )
    result = _renderer(key=key, data=payload, on_action_change=lambda: None)
    action = getattr(result, "action", None)
    return action if isinstance(action, dict) else None


_COOKIE_JS = """
export default function (component) {
  const d = component.data || {};
  if (typeof d.value !== "string" || !/^[A-Za-z0-9_.@~-]*$/.test(d.value)) return;
  const secure = location.protocol === "https:" ? "; Secure" : "";
  const life = d.value === "" ? "Max-Age=0" : "Max-Age=" + Number(d.max_age);
  document.cookie = d.name + "=" + d.value + "; Path=/; " + life + "; SameSite=Strict" + secure;
}
"""
_cookie_renderer: Any = None


def session_cookie(state: Any, *, key: str = "deid_session_cookie") -> None:
    """Write ``state["cookie"]`` to the browser (a token, or "" to clear it), once.

    Components v2 run their JavaScript in the page itself, so ``document.cookie``
    reaches the app's origin; Streamlit reads it back through ``st.context.cookies``
    when the next session (a reload) starts. The value is a signed token without
    PHI (:mod:`deid_core.ui.session_token`); ``SameSite=Strict``, ``Secure`` on HTTPS.
    """
    global _cookie_renderer
    import streamlit as st

    from deid_core.ui.session_token import COOKIE_NAME, MAX_AGE_SECONDS

    if _cookie_renderer is None:
        _cookie_renderer = st.components.v2.component(
            "deid_session_cookie", html="", js=_COOKIE_JS, isolate_styles=False
        )
    value = state.get("cookie")
    state["cookie"] = None  # written once; the next run leaves the cookie alone
    _cookie_renderer(key=key, data={"name": COOKIE_NAME, "value": value, "max_age": MAX_AGE_SECONDS})
