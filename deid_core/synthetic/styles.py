"""Surface styles applied to a whole rendered note: case, punctuation, abbreviation.

Real notes are typed in a hurry: all lowercase, all capitals, without full
stops, in shorthand ("pt w/ hx of afib"). A model trained only on tidy text
learns that a name is a capitalised word after "Dr."; these styles break that
crutch. Each style rewrites text outside the gold spans (case also inside,
since a lowercase note has lowercase names) and moves the spans by the edits,
so offsets stay exact and every span still starts and ends on a token edge.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from random import Random

from deid_core.spans import Span

#: Styles that rewrite the text; "signature" (a signature block) is rendered from templates.
TEXT_STYLES = ("lower", "upper", "sparse", "abbrev")
STYLES = (*TEXT_STYLES, "signature")

# Whole words, case-insensitive; the replacement keeps nothing of the original case.
_ABBREVIATIONS: tuple[tuple[str, str], ...] = (
    ("patient", "pt"), ("patients", "pts"), ("with", "w/"), ("without", "w/o"), ("history", "hx"),
    ("history of", "h/o"), ("and", "&"), ("discharge", "d/c"), ("discharged", "d/c'd"),
    ("follow up", "f/u"), ("follow-up", "f/u"), ("secondary to", "2/2"), ("hours", "hrs"),
    ("blood pressure", "BP"), ("heart rate", "HR"), ("shortness of breath", "SOB"),
    ("continue", "cont"), ("increase", "incr"), ("decrease", "decr"), ("evening", "eve"),
    ("morning", "am"), ("yesterday", "yest"), ("family", "fam"), ("daughter", "dtr"),
    ("husband", "hsb"), ("medications", "meds"), ("medication", "med"), ("year old", "yo"),
    ("year-old", "y/o"), ("negative", "neg"), ("positive", "pos"), ("bilateral", "bilat"),
    ("complains of", "c/o"), ("status post", "s/p"), ("because", "b/c"), ("change", "chg"),
    ("temperature", "temp"), ("hospital", "hosp"), ("treatment", "tx"), ("diagnosis", "dx"),
    ("symptoms", "sx"), ("nursing", "nsg"), ("physical therapy", "PT"), ("approximately", "approx"),
    ("minutes", "min"), ("times", "x"), ("right", "R"), ("left", "L"), ("normal", "nl"),
    ("discussed with", "d/w"), ("around", "~"), ("at", "@"), ("greater than", ">"),
    ("less than", "<"), ("social work", "SW"), ("case management", "CM"),
)
_ABBREV_RE = re.compile(
    r"\b(" + "|".join(re.escape(k) for k, _ in sorted(_ABBREVIATIONS, key=lambda kv: -len(kv[0]))) + r")\b",
    re.IGNORECASE,
)
_ABBREV = {k: v for k, v in _ABBREVIATIONS}
# Sentence and list punctuation followed by white space: dropping it leaves a token edge.
_SPARSE_RE = re.compile(r"[.,;:]+(?=\s|$)")


def pick_styles(rng: Random, p: float) -> tuple[str, ...]:
    """Which styles one note gets: none with probability ``1 - p``, else one to three."""
    if p <= 0 or rng.random() >= p:
        return ()
    case = rng.choice(("lower", "lower", "upper", "", ""))
    extra = [s for s in ("sparse", "abbrev", "signature") if rng.random() < 0.4]
    if not case and not extra:
        extra = [rng.choice(("sparse", "abbrev", "signature"))]
    return tuple(s for s in (case, *extra) if s)


def _edits(text: str, spans: Sequence[Span], pattern: re.Pattern[str], repl) -> list[tuple[int, int, str]]:  # type: ignore[no-untyped-def]
    """Non-overlapping (start, end, replacement) edits outside every span."""
    out = []
    bounds = sorted((s.start, s.end) for s in spans)
    for m in pattern.finditer(text):
        a, b = m.span()
        if any(a < e and s < b for s, e in bounds):
            continue
        out.append((a, b, repl(m)))
    return out


def _apply(text: str, spans: Sequence[Span], edits: list[tuple[int, int, str]]) -> tuple[str, list[Span]]:
    if not edits:
        return text, list(spans)
    pieces: list[str] = []
    pos = 0
    starts: list[int] = []  # edit start in the old text
    shifts: list[int] = []  # cumulative length change after that edit
    shift = 0
    for a, b, r in edits:
        pieces.append(text[pos:a])
        pieces.append(r)
        pos = b
        shift += len(r) - (b - a)
        starts.append(a)
        shifts.append(shift)
    pieces.append(text[pos:])

    def moved(x: int) -> int:
        # edits are outside spans, so a span edge moves by the edits before it
        k = 0
        delta = 0
        while k < len(starts) and starts[k] < x:
            delta = shifts[k]
            k += 1
        return x + delta

    return "".join(pieces), [Span(moved(s.start), moved(s.end), s.label, s.source, s.score) for s in spans]


def _case(text: str, upper: bool) -> str:
    # Character by character, so a character whose case form has another length stays as it is.
    out = []
    for ch in text:
        c = ch.upper() if upper else ch.lower()
        out.append(c if len(c) == 1 else ch)
    return "".join(out)


def apply_styles(text: str, spans: Sequence[Span], styles: Sequence[str]) -> tuple[str, list[Span]]:
    """Rewrite a rendered note in the given text styles; spans follow the edits."""
    out_spans = list(spans)
    if "abbrev" in styles:
        text, out_spans = _apply(text, out_spans, _edits(text, out_spans, _ABBREV_RE,
                                                         lambda m: _ABBREV[m.group(0).lower()]))
    if "sparse" in styles:
        text, out_spans = _apply(text, out_spans, _edits(text, out_spans, _SPARSE_RE, lambda m: ""))
    if "lower" in styles:
        text = _case(text, upper=False)
    elif "upper" in styles:
        text = _case(text, upper=True)
    return text, out_spans
