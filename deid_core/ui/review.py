"""What the Review page shows for one note, computed without Streamlit.

The model layer is re-decoded at the project's current bias from a cached
``Encoded`` (features and emissions computed once per note and model), so a
bias change on the Bias page shows up in the highlights at once. The reviewer's
own edits are never overwritten by that: while the draft is untouched it
follows the model; once edited, only the near-miss hints follow the bias.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any

from deid_core.spans import Document, Span
from deid_core.ui.editing import EditState

#: Tokens left out by the model but with P(PHI) at least this high get a dotted underline.
NEAR_MISS_THRESHOLD = 0.2
#: How many encoded notes a session keeps (each holds tokens and emissions of one note).
ENCODED_CACHE_SIZE = 32


@dataclass(frozen=True, slots=True)
class ModelView:
    """The model's reading of one note at one bias."""

    spans: tuple[Span, ...]
    near_misses: tuple[Span, ...]
    logprob: float | None
    logprob_per_token: float | None
    model_version: str | None
    bias: float


def encoded_for(cache: MutableMapping[Any, Any], model: Any, doc: Document) -> Any:
    """``model.encode(doc)`` through a small per-session LRU keyed by note and model version.

    The cache lives in ``st.session_state`` (never ``cache_resource``): an
    ``Encoded`` holds the note's tokens, which are PHI.
    """
    # The text's hash too: ids are only unique within a project.
    key = (doc.id, getattr(model, "version", None), len(doc.text), hash(doc.text))
    if not isinstance(cache, OrderedDict):
        fresh: OrderedDict[Any, Any] = OrderedDict(cache.items())
        cache.clear()
        cache.update(fresh)
    if key in cache:
        value = cache.pop(key)
        cache[key] = value
        return value
    value = model.encode(doc)
    cache[key] = value
    while len(cache) > ENCODED_CACHE_SIZE:
        cache.pop(next(iter(cache)))
    return value


def model_view(
    model: Any, encoded: Any, bias: float, *, near_threshold: float = NEAR_MISS_THRESHOLD
) -> ModelView:
    pred = model.decode(encoded, bias)
    return ModelView(
        tuple(pred.spans),
        tuple(pred.near_misses(near_threshold)),
        float(pred.logprob),
        float(pred.logprob_per_token),
        getattr(model, "version", None),
        float(bias),
    )


def follow_model(state: EditState | None, model_spans: Sequence[Span], reviewed: Sequence[Span] | None) -> EditState:
    """The edit state to show: the reviewer's edits if any, else the freshest starting layer.

    A note that was already reviewed starts from its reviewed layer; otherwise
    from the model at the current bias, and an untouched draft is rebuilt when
    the bias (or model) changes what the model marks.
    """
    start = list(reviewed) if reviewed else list(model_spans)
    if state is None:
        return EditState.start(start)
    if state.dirty or state.can_undo:
        return state
    if {s.key for s in state.origin} != {s.key for s in start}:
        return EditState.start(start)
    return state


def hints_for(shown: Sequence[Span], live: ModelView) -> tuple[Span, ...]:
    """Where to look when the layer shown is not the live model's (an import, an older model).

    The live model's near misses, plus its own spans that the shown layer does
    not cover: each is a possible miss, drawn with a dotted underline.
    """
    extra = [s for s in live.spans if not any(s.overlaps(p) for p in shown)]
    return tuple(sorted([*live.near_misses, *extra], key=lambda s: (s.start, s.end)))


#: A patient's other notes read for possible misses (most recent first); more is rarely useful.
PATIENT_NOTES_LIMIT = 40


def patient_phi_strings(
    engine: Any, cache: MutableMapping[Any, Any], project_id: int, patient_id: Any, doc_id: int
) -> list[tuple[str, str]]:
    """(text, label) of the PHI marked in this patient's other notes: reviewed spans, else
    predicted ones. The review editor marks their unmarked occurrences in this note as
    possible misses. Cached in the session (the strings are PHI: never process-wide)."""
    if not patient_id:
        return []
    key = (project_id, str(patient_id), doc_id)
    if key in cache:
        return list(cache[key])
    from deid_core.store import repository as repo
    from deid_core.ui.queue import patient_document_ids

    found: dict[str, str] = {}
    others = [i for i in patient_document_ids(engine, project_id, str(patient_id)) if i != doc_id]
    for other in others[-PATIENT_NOTES_LIMIT:]:
        layers = repo.get_document(engine, other)
        spans = layers.document.spans if layers.version > 0 else (
            layers.prediction.spans if layers.prediction is not None else ())
        for span in spans:
            text = layers.document.text[span.start : span.end]
            if len(text.strip()) > 1:
                found.setdefault(text, span.label)
    out = sorted(found.items())
    if len(cache) > 64:
        cache.clear()
    cache[key] = out
    return out


def pace_text(seconds: Sequence[float]) -> str:
    """" · this session: 5 notes, 48 s per note" for the Review page's progress line."""
    if not seconds:
        return " · this session: no notes yet"
    ordered = sorted(seconds)
    median = ordered[len(ordered) // 2] if len(ordered) % 2 else (
        ordered[len(ordered) // 2 - 1] + ordered[len(ordered) // 2]) / 2
    per_hour = 3600.0 / median if median > 0 else 0.0
    return (f" · this session: {len(seconds)} note{'s' if len(seconds) != 1 else ''},"
            f" median {median:.0f} s per note (~{per_hour:.0f}/hour)")


#: Two numbers joined by a range dash, a slash, a decimal point or a colon, and not part of a
#: longer chain: "98-107", "7/10", "120/80", "4.1". Three or more parts ("3/14/2067",
#: "2067-07-14", "555-123-4567") are dates, phone numbers or ids, where a digit string
#: is worth a look.
_NUMERIC_CHAIN = re.compile(r"(?<![\d.,/:\-–])\d+(?:(?:\s*[-–]\s*|[/.:])\d+)+(?![\d])")
_NUMBER = re.compile(r"\d+")


def numeric_context_tokens(text: str, tokens: Sequence[Any]) -> list[tuple[int, int]]:
    """(start, end) of the digit-only tokens that sit inside a numeric range or a lab value.

    The review editor marks unmarked occurrences of PHI strings as possible
    misses; an all-digit one inside "(98-107)" or "BP 120/80" (the "107" of a
    reference range that happens to equal an age elsewhere) is noise, so the
    editor leaves those tokens out. Only chains of exactly two numbers count:
    longer chains are dates, phone numbers or identifiers.
    """
    inside: set[tuple[int, int]] = set()
    for chain in _NUMERIC_CHAIN.finditer(text):
        numbers = list(_NUMBER.finditer(chain.group()))
        if len(numbers) != 2:
            continue
        base = chain.start()
        inside.update((base + m.start(), base + m.end()) for m in numbers)
    return [(t.start, t.end) for t in tokens if (t.start, t.end) in inside]
