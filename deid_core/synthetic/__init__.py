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

from deid_core.errors import UnsupportedFormat
from deid_core.spans import Document
from deid_core.synthetic.people import make_patient, timeline
from deid_core.synthetic.render import render_note
from deid_core.synthetic.slots import HEADER_DATE_STYLES, Note, account_number
from deid_core.synthetic.templates import SUPPORTED_LANGUAGES, Templates, load_templates

__all__ = [
    "GENERATOR", "KINDS", "SUPPORTED_LANGUAGES", "available_kinds", "generate_notes", "iter_notes",
    "load_templates",
]

GENERATOR = "deid-workbench synthetic v1"
#: English note kinds; ``available_kinds("es")`` lists the Spanish ones.
KINDS = ("discharge_summary", "progress_note", "referral_letter", "lab_report")

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
) -> Iterator[Document]:
    """Yield ``n`` synthetic notes one at a time (constant memory for large ``n``).

    Arguments are checked here, before the first note, so that a bad call fails
    at once rather than when a consumer starts iterating.
    """
    if n < 0:
        raise ValueError("n must be >= 0")
    t = load_templates(lang)
    allowed = tuple(kinds) if kinds else tuple(t.kinds)
    unknown = [k for k in allowed if k not in t.kinds]
    if unknown:
        raise UnsupportedFormat(
            f"unknown note kind(s) {', '.join(map(repr, unknown))} for {lang!r};"
            f" use {', '.join(t.kinds)}"
        )
    lo, hi = notes_per_patient
    if lo < 1 or hi < lo:
        raise ValueError("notes_per_patient must be (low, high) with 1 <= low <= high")
    return _generate(n, seed, t, allowed, (lo, hi))


def _generate(
    n: int, seed: int, t: Templates, allowed: tuple[str, ...], notes_per_patient: tuple[int, int]
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
            text, spans = render_note(t.kinds[kind], note, t)
            meta = {
                "synthetic": True,
                "generator": GENERATOR,
                "kind": kind,
                "patient_id": patient.pid,
                "note_index": k,
                "seed": seed,
                "lang": t.lang,
            }
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
    progress: ProgressFn | None = None,
) -> list[Document]:
    """``n`` deterministic synthetic notes with gold spans; see the package docstring."""
    out: list[Document] = []
    step = max(1, n // 100)
    for doc in iter_notes(n, seed=seed, lang=lang, kinds=kinds, notes_per_patient=notes_per_patient):
        out.append(doc)
        if progress is not None and len(out) % step == 0:
            progress("generating synthetic notes", len(out) / n)
    if progress is not None:
        progress("generating synthetic notes", 1.0)
    return out
