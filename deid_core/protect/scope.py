"""Patient and corpus scope: PHI strings found in some notes, masked in the others.

A name tagged in one note and missed in another note of the same patient is a
leak that no single-note step can see. Both the export and ``deidentify``
therefore work in two passes over their input: the first gathers the PHI
strings of identifying kinds (names, ids, contacts, addresses, facilities)
into one ``KnownPhi`` (an Aho-Corasick automaton over their variants, with the
patients that hold each), the second masks their occurrences in every note of
the same patient, or of the whole input, before de-identifying. Memory follows
the set of distinct strings, not the number of notes.

This module is the one place both callers take that logic from, so an export
and a ``deidentify`` run mask the same occurrences for the same strings.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from deid_core.engine.propagate import SOURCE as PROPAGATED
from deid_core.engine.propagate import known_phi_items, select_new
from deid_core.protect.leakcheck import KnownPhi, Scope, make_candidates
from deid_core.protect.operators import OperatorConfig
from deid_core.spans import Document, Span


def patient_of(patient_key: str | None, doc_id: str) -> str:
    """The scope key of a note: its patient, or the note itself when it has no patient key."""
    return patient_key if patient_key is not None else f"\x00doc:{doc_id}"


def replaced_values(
    text: str, spans: Iterable[Span], meta: Mapping[str, Any], doc_id: str, ops: OperatorConfig
) -> list[tuple[str, str]]:
    """``(label, string)`` of the spans the operators replace, plus the note's ``known_phi``."""
    values = [(s.label, text[s.start : s.end]) for s in spans if ops.operator_for(s.label).kind != "keep"]
    return values + known_phi_items(meta, doc_id=doc_id)


def add_values(
    known: KnownPhi, doc_id: str, values: Iterable[tuple[str, str]], patient: str
) -> None:
    """Add a note's PHI strings to ``known`` (``make_candidates``' skips apply; only
    identifying kinds are kept)."""
    for cand in make_candidates(doc_id, values, lang=known.lang, skipped={}):
        known.add(cand, patient)


def mask_in_scope(
    doc: Document, spans: Sequence[Span], known: KnownPhi, patient: str, scope: Scope, ops: OperatorConfig
) -> list[Span]:
    """``propagated`` spans for the occurrences, in ``doc``, of the scope's PHI strings
    that no span covers yet (never overlapping ``spans``).

    ``document`` scope searches the note for its own replaced strings only.
    """
    index = known
    if scope == "document":
        index = KnownPhi(ops.lang)
        add_values(index, doc.id, replaced_values(doc.text, spans, doc.meta, doc.id, ops), patient)
    found = [
        Span(start, end, label, PROPAGATED, 1.0)
        for start, end, label in index.spans_in(doc.text, patient, "corpus" if scope == "document" else scope)
    ]
    return select_new(spans, found) if found else []
