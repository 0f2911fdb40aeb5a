"""Synthetic clinical notes with exact gold PHI spans.

Why: tests, demos and benchmarks need realistic notes with PHI, and real notes
cannot leave the hospital. Text and spans are built together: every piece is
appended to the note and, when it is PHI, its offsets are recorded on the spot,
so a gold span can never drift from its text (nothing is searched afterwards).

English notes use the i2b2 2014 labels; Spanish notes (``lang="es"``,
MEDDOCAN-style case reports and discharge reports) use the MEDDOCAN labels.
Templates are data (``deid_core/data/synthetic/<lang>.yaml``); ``slots`` fills
them, ``people`` invents patients, ``render`` lays notes out.

Each patient is generated from its own seeded ``random.Random``, so a corpus is
the same on every run and machine for one seed (and one Faker version), and
``generate_notes(n)`` is a prefix of ``generate_notes(m)`` for ``n < m``. A
patient keeps the same name, DOB, MRN, address and care team across their
notes, and their notes are in time order.

Notes are flagged as synthetic in ``meta`` and by the ``synth-`` id prefix,
never in the text, so that the text stays realistic.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from deid_core.errors import UnsupportedFormat
from deid_core.spans import Document, Span
from deid_core.synthetic.people import make_patient, timeline
from deid_core.synthetic.render import render_note, render_section
from deid_core.synthetic.slots import HEADER_DATE_STYLES, Note, Writer, account_number
from deid_core.synthetic.styles import STYLES, apply_styles, pick_styles
from deid_core.synthetic.templates import (
    FAMILIES,
    SUPPORTED_LANGUAGES,
    Templates,
    family_templates,
    load_templates,
)

__all__ = [
    "FAMILIES", "GENERATOR", "KINDS", "REALISTIC", "STYLES", "SUPPORTED_LANGUAGES", "available_kinds",
    "generate_notes", "iter_notes", "load_templates",
]

GENERATOR = "deid-workbench synthetic v1"
#: The English kinds drawn when ``kinds`` is not given; ``available_kinds()`` lists all.
KINDS = ("discharge_summary", "progress_note", "referral_letter", "lab_report")
#: English genres written in shorthand (issue 12): ICU nursing and progress notes,
#: social-work and case-management notes, phone calls, radiology reports.
SHORTHAND_KINDS = ("nursing_note", "icu_progress_note", "social_work_note", "phone_note", "radiology_report")
#: Generator options for notes that look like a hospital's day-to-day English notes
#: rather than tidy dictations: every genre, and a surface style on most notes.
REALISTIC: dict[str, Any] = {
    "kinds": [*KINDS, *SHORTHAND_KINDS],
    "styles": 0.6,
}

ProgressFn = Callable[[str, float], None]


def available_kinds(lang: str = "en") -> tuple[str, ...]:
    return tuple(load_templates(lang).kinds)


def iter_notes(
    n: int,
    *,
    seed: int = 0,
    lang: str = "en",
    kinds: Sequence[str] | None = None,
    notes_per_patient: tuple[int, int] = (1, 4),
    styles: float = 0.0,
    families: str = "all",
) -> Iterator[Document]:
    """Yield ``n`` synthetic notes one at a time (constant memory for large ``n``).

    ``styles`` is the share of notes given a surface style (lowercase, capitals,
    sparse punctuation, abbreviations, a signature block; English only).
    ``families`` picks the templates: ``all``, or the disjoint ``train`` and
    ``dev`` families, so that a model scored on dev notes is scored on wording
    it was not trained on. With the defaults the output is what it always was.

    Arguments are checked here, before the first note, so that a bad call fails
    at once rather than when a consumer starts iterating.
    """
    if n < 0:
        raise ValueError("n must be >= 0")
    if not 0.0 <= styles <= 1.0:
        raise ValueError("styles must be a share between 0 and 1")
    t = family_templates(lang, families)
    if styles and t.lang != "en":
        raise UnsupportedFormat(f"surface styles are written for English notes, not {t.lang!r}")
    allowed = tuple(kinds) if kinds else tuple(k for k, v in t.kinds.items() if v.default)
    unknown = [k for k in allowed if k not in t.kinds]
    if unknown:
        raise UnsupportedFormat(
            f"unknown note kind(s) {', '.join(map(repr, unknown))} for {lang!r};"
            f" use {', '.join(t.kinds)}"
        )
    lo, hi = notes_per_patient
    if lo < 1 or hi < lo:
        raise ValueError("notes_per_patient must be (low, high) with 1 <= low <= high")
    return _generate(n, seed, t, allowed, (lo, hi), float(styles), families)


def _signature(note: Note, t: Templates, text: str, spans: list[Span]) -> tuple[str, list[Span]]:
    w = Writer(t.labels)
    render_section(t.sections["signature_block"], note, w, t)
    base = len(text)
    return text + w.text() + "\n", spans + [Span(s.start + base, s.end + base, s.label) for s in w.spans]


def _generate(
    n: int, seed: int, t: Templates, allowed: tuple[str, ...], notes_per_patient: tuple[int, int],
    styles: float = 0.0, families: str = "all",
) -> Iterator[Document]:
    lo, hi = notes_per_patient
    weights = [t.kinds[k].weight for k in allowed]
    prefix = f"synth-{seed}" if t.lang == "en" else f"synth-{t.lang}-{seed}"
    index = 0
    patient_index = 0
    while index < n:
        patient = make_patient(patient_index, seed, t.lang, t.lex)
        rng = patient.rng
        m = rng.randint(lo, hi)
        note_kinds = [rng.choices(allowed, weights)[0] for _ in range(m)]
        for k, (kind, dates) in enumerate(zip(note_kinds, timeline(patient, note_kinds))):
            if index >= n:
                break
            note = Note(kind, t.lang, patient, rng, dates, rng.choice(HEADER_DATE_STYLES[t.lang]),
                        account_number(rng, t.lang))
            chosen = pick_styles(rng, styles) if styles else ()
            text, spans = render_note(t.kinds[kind], note, t)
            if "signature" in chosen:
                text, spans = _signature(note, t, text, spans)
            if chosen:
                text, spans = apply_styles(text, spans, chosen)
            meta: dict[str, Any] = {
                "synthetic": True,
                "generator": GENERATOR,
                "kind": kind,
                "patient_id": patient.pid,
                "note_index": k,
                "seed": seed,
                "lang": t.lang,
            }
            if styles or families != "all":
                meta["styles"] = list(chosen)
                meta["family"] = families
            yield Document(f"{prefix}-{index:05d}", text, tuple(spans), meta)
            index += 1
        patient_index += 1


def generate_notes(
    n: int,
    *,
    seed: int = 0,
    lang: str = "en",
    kinds: Sequence[str] | None = None,
    notes_per_patient: tuple[int, int] = (1, 4),
    styles: float = 0.0,
    families: str = "all",
    progress: ProgressFn | None = None,
) -> list[Document]:
    """``n`` deterministic synthetic notes with gold spans; see the package docstring and ``iter_notes``."""
    out: list[Document] = []
    step = max(1, n // 100)
    for doc in iter_notes(n, seed=seed, lang=lang, kinds=kinds, notes_per_patient=notes_per_patient,
                          styles=styles, families=families):
        out.append(doc)
        if progress is not None and len(out) % step == 0:
            progress("generating synthetic notes", len(out) / n)
    if progress is not None:
        progress("generating synthetic notes", 1.0)
    return out
