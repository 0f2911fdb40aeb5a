"""Highlighted notes as segments and as escaped HTML.

One pure function cuts the note into segments (plain text, PHI span, near-miss
token); the HTML renderer and the review component both draw from it, so what
the reviewer sees in the component and in static previews is the same.

Security: note text, labels, sources and scores are all untrusted (a label can
come from an imported file). Every value goes through ``html.escape`` with
``quote=True``; colours are used only when they match ``#rrggbb``. displaCy
escapes the text but not the label; we escape both.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from deid_core.schemes import LabelScheme
from deid_core.spans import Span

#: A span whose score (marginal probability) is below this is marked uncertain.
DEFAULT_UNCERTAIN_BELOW = 0.8
FALLBACK_COLOUR = "#999999"
_HEX = re.compile(r"^#[0-9a-fA-F]{6}$")


@dataclass(frozen=True, slots=True)
class Segment:
    """A run of the note: ``kind`` is "text", "span" or "near"."""

    start: int
    end: int
    kind: str
    label: str = ""
    score: float = 1.0
    source: str = ""
    uncertain: bool = False


def safe_colour(colour: str | None) -> str:
    """A colour fit for a style attribute, whatever the scheme file said."""
    return colour if colour and _HEX.match(colour) else FALLBACK_COLOUR


def label_colours(labels: Iterable[str], scheme: LabelScheme | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for label in labels:
        colour = scheme.info(label).colour if scheme is not None else None
        out[label] = safe_colour(colour)
    return out


def text_colour(background: str) -> str:
    """Black or white, whichever reads better on ``background`` (WCAG luminance)."""
    bg = safe_colour(background)
    r, g, b = (int(bg[i : i + 2], 16) / 255 for i in (1, 3, 5))

    def lin(c: float) -> float:
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    lum = 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b)
    return "#000000" if lum > 0.25 else "#ffffff"


def segment_note(
    text_length: int,
    spans: Sequence[Span],
    near_misses: Sequence[Span] = (),
    *,
    uncertain_below: float = DEFAULT_UNCERTAIN_BELOW,
) -> list[Segment]:
    """Cut ``[0, text_length)`` into consecutive segments.

    Spans are expected not to overlap (one layer); if they do, a later span is
    clipped so that every character belongs to one segment. Near misses that
    touch a span are dropped: the span already draws the eye there.
    """
    out: list[Segment] = []
    pos = 0
    marks: list[tuple[Span, str]] = [(s, "span") for s in spans]
    for near in near_misses:
        if not any(near.overlaps(s) for s in spans):
            marks.append((near, "near"))
    marks.sort(key=lambda m: (m[0].start, m[0].end))
    for span, kind in marks:
        start = max(span.start, pos)
        end = min(span.end, text_length)
        if start >= end:
            continue
        if start > pos:
            out.append(Segment(pos, start, "text"))
        out.append(
            Segment(
                start,
                end,
                kind,
                span.label,
                float(span.score),
                span.source,
                kind == "span" and span.score < uncertain_below,
            )
        )
        pos = end
    if pos < text_length:
        out.append(Segment(pos, text_length, "text"))
    return out


def _esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def span_title(seg: Segment) -> str:
    """Hover text: label, score and provenance (no note text)."""
    if seg.kind == "near":
        return f"possible {seg.label}: p={seg.score:.2f} (not highlighted by the model)"
    flag = " - uncertain, check" if seg.uncertain else ""
    source = f" [{seg.source}]" if seg.source else ""
    return f"{seg.label} {seg.score:.2f}{source}{flag}"


def render_note_html(
    text: str,
    spans: Sequence[Span],
    *,
    scheme: LabelScheme | None = None,
    near_misses: Sequence[Span] = (),
    uncertain_below: float = DEFAULT_UNCERTAIN_BELOW,
    colours: Mapping[str, str] | None = None,
) -> str:
    """The note with PHI highlighted, as a self-contained escaped HTML fragment."""
    segments = segment_note(len(text), spans, near_misses, uncertain_below=uncertain_below)
    palette = dict(colours or {})
    palette.update(
        label_colours({s.label for s in segments if s.label and s.label not in palette}, scheme)
    )
    parts = ['<div class="deid-note">']
    for seg in segments:
        chunk = _esc(text[seg.start : seg.end])
        if seg.kind == "text":
            parts.append(chunk)
            continue
        attrs = (
            f' data-start="{seg.start}" data-end="{seg.end}" data-label="{_esc(seg.label)}"'
            f' title="{_esc(span_title(seg))}"'
        )
        colour = safe_colour(palette.get(seg.label))
        if seg.kind == "near":
            parts.append(
                f'<span class="deid-near"{attrs} style="border-bottom:2px dotted {colour}">'
                f"{chunk}</span>"
            )
            continue
        cls = "deid-span deid-uncertain" if seg.uncertain else "deid-span"
        parts.append(
            f'<mark class="{cls}"{attrs} style="background:{colour};color:{text_colour(colour)}">'
            f'{chunk}<span class="deid-tag">{_esc(seg.label)}</span></mark>'
        )
    parts.append("</div>")
    return "".join(parts)


def render_legend_html(
    labels: Iterable[str], scheme: LabelScheme | None = None, *, numbered: bool = False
) -> str:
    """One swatch per label; ``numbered`` shows the 1-9 shortcut keys."""
    items = []
    for i, label in enumerate(labels):
        colour = label_colours([label], scheme)[label]
        key = f"<kbd>{i + 1}</kbd> " if numbered and i < 9 else ""
        items.append(
            f'<span class="deid-legend-item">{key}<span class="deid-swatch" '
            f'style="background:{colour}"></span>{_esc(label)}</span>'
        )
    return '<div class="deid-legend">' + "".join(items) + "</div>"


NOTE_CSS = """
.deid-static .deid-note{white-space:pre-wrap;font-family:ui-monospace,Menlo,Consolas,monospace;
  font-size:0.92rem;line-height:1.9;padding:0.8rem;border:1px solid rgba(128,128,128,0.45);
  border-radius:6px;background:transparent;color:inherit;max-height:70vh;overflow-y:auto}
.deid-static .deid-span{border-radius:3px;padding:1px 2px}
.deid-static .deid-uncertain{outline:2px dashed #d6336c;outline-offset:1px}
.deid-static .deid-tag{font-size:0.62rem;font-weight:700;margin-left:3px;opacity:0.85;
  font-family:system-ui,sans-serif;vertical-align:super;user-select:none}
.deid-static .deid-near{cursor:help}
.deid-static .deid-hatch{display:inline-block;width:1.6rem;height:0.9rem;border-bottom:3px solid #d6336c;
  background-image:repeating-linear-gradient(135deg,#d6336c 0 3px,transparent 3px 7px)}
.deid-static .deid-legend{display:flex;flex-wrap:wrap;gap:0.35rem 0.9rem;font-size:0.8rem;margin:0.3rem 0;color:inherit}
.deid-static .deid-legend-item{display:inline-flex;align-items:center;gap:0.3rem}
.deid-static .deid-legend kbd{font-size:0.72rem;font-family:ui-monospace,Menlo,Consolas,monospace;
  border:1px solid rgba(128,128,128,0.6);border-radius:3px;padding:0 4px;color:inherit;
  background:rgba(128,128,128,0.15)}
.deid-static .deid-swatch{display:inline-block;width:0.9rem;height:0.9rem;border-radius:2px}
.deid-static .deid-marks{display:flex;flex-wrap:wrap;gap:0.35rem 1.2rem;font-size:0.8rem;margin-top:0.6rem;color:inherit}
.deid-static .deid-marks mark{background:rgba(128,128,128,0.25);color:inherit;padding:0 4px}
"""


def render_marks_legend_html() -> str:
    """What the outlines and fills on a note mean (the label swatches say which label)."""
    return (
        '<div class="deid-marks">'
        '<span class="deid-legend-item"><mark class="deid-span deid-uncertain">span</mark>'
        " uncertain: marginal probability below the project's threshold</span>"
        '<span class="deid-legend-item"><span class="deid-hatch"></span>'
        " possible miss: the same text is PHI elsewhere, or the model gave it a PHI"
        " probability; Enter accepts it</span>"
        "</div>"
    )


def page_html(body: str) -> str:
    """``body`` wrapped with the note stylesheet, for ``st.html``. The rules are scoped to
    the wrapper, so they never restyle the review component on the same page."""
    return f'<style>{NOTE_CSS}</style><div class="deid-static">{body}</div>'


#: Keys 1-9 go to the labels reviewers need most. For i2b2 2014 this is the
#: frequency order of the 2014 training data (dates, names, hospitals, ages and
#: record numbers dominate); other schemes keep their own order unless the
#: project sets ``shortcut_labels``.
DEFAULT_SHORTCUTS = {
    "i2b2_2014": ("DATE", "DOCTOR", "PATIENT", "HOSPITAL", "AGE", "MEDICALRECORD", "CITY",
                  "PHONE", "STREET"),
}


def shortcut_order(
    labels: Sequence[str], scheme_name: str = "", preferred: Sequence[str] | None = None
) -> list[str]:
    """All ``labels``, the preferred ones (that exist) first, then the rest in scheme order."""
    first = [lab for lab in (preferred or DEFAULT_SHORTCUTS.get(scheme_name, ())) if lab in labels]
    return list(dict.fromkeys([*first, *labels]))
