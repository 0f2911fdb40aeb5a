"""Automatic de-identification of one note: model -> operators -> leak check -> record.

The single-process ``deidentify`` command and the Dask batch workers both call
``Deidentifier.process``, so the two paths cannot drift apart: for the same
model, settings, secret and note they produce the same bytes, and the same
notes are rejected for the same reasons. The model propagates known PHI
within the note (``engine/propagate.py``); ids, patient keys and source paths
are written as HMAC pseudonyms unless ``keep_ids``.

Patient and corpus scope (``scope``): a name the model tagged confidently in
one note is masked in the patient's other notes (or every note) too. A first
pass (``gather``) collects the *seeds* of every note into one ``KnownPhi``;
the second (``process(..., known=...)``) masks their occurrences, with the
same surrogate, and leak-checks within the scope. There is no reviewer here,
so a seed is what stands in for "confirmed": a span of an identifying kind
(names, ids, contacts, addresses, facilities) that the model tagged with a
marginal probability of at least ``seed_min_score`` (default: the model's
``propagate_min_score``, 0.9), or that comes from the record
(``meta.known_phi``, source ``known``). Spans that in-note propagation added
do not seed: they may come from low-confidence tags.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import IO, Any

from deid_core.corpus import document_to_dict
from deid_core.engine.model import DeidModel
from deid_core.engine.propagate import SOURCE as PROPAGATED
from deid_core.engine.propagate import is_trusted, propagate
from deid_core.errors import UnsupportedFormat
from deid_core.protect.leakcheck import SCOPES, KnownPhi, LeakChecker, LeakReport, Scope
from deid_core.protect.operators import (
    DeidentifiedDocument,
    OperatorConfig,
    deidentify_document,
    pseudonymise_meta,
)
from deid_core.protect.scope import add_values, mask_in_scope, patient_of, replaced_values
from deid_core.spans import Document, Span, sort_spans


def operator_config(
    *,
    lang: str,
    scheme: str | None,
    mode: str | None = None,
    settings: Mapping[str, Any] | None = None,
) -> OperatorConfig:
    """Operator settings from a project/YAML mapping, with ``mode`` overriding the default."""
    raw: dict[str, Any] = dict(settings or {})
    if mode:
        raw["default"] = {"kind": mode}
    raw.setdefault("lang", lang)
    raw.setdefault("scheme", scheme)
    return OperatorConfig.from_dict(raw)


@dataclass(frozen=True)
class NoteOutcome:
    """What happened to one note: a record to write, or a reject (id, offsets, reason)."""

    doc_id: str
    record: dict[str, Any] | None  # None: rejected
    reason: str | None
    #: Failing leak-check hits: start, end, field, label, match (never text).
    hits: tuple[dict[str, Any], ...]
    spans: int
    propagated: int
    #: Spans masked because a string seeded in another note of the scope occurs here:
    #: (start, end, label) in the original note (never text).
    masked: tuple[tuple[int, int, str], ...] = ()


class SpanReplay:
    """The first pass's spans, in input order, for the second pass to reuse.

    Patient and corpus scope read the input twice, and tagging is most of
    each pass. The first pass records every note's spans (offsets, labels,
    sources and scores, with the note's id and length to recognise it, never
    its text) in an anonymous temporary file, so memory does not grow with
    the corpus; the second pass reads them back in the same order. A note the
    first pass did not record (it failed there) is tagged again.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, *, replay_only: bool = False) -> None:
        """Record into an anonymous temporary file, or into ``path`` when another
        process will replay it (the Dask engine's two passes run on any worker);
        ``replay_only`` opens what another process recorded at ``path`` and replays it."""
        if path is None:
            self._fh: IO[str] = tempfile.TemporaryFile(mode="w+", encoding="utf-8")
        else:
            self._fh = open(path, "r" if replay_only else "w+", encoding="utf-8")  # noqa: SIM115 - closed by close()
        self._replaying = False
        self._next: list[Any] | None = None
        self.reused = 0
        if replay_only:
            self.start_replay()

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> SpanReplay:
        """A replay of the spans another process recorded at ``path``."""
        return cls(path, replay_only=True)

    @property
    def replaying(self) -> bool:
        return self._replaying

    def record(self, doc: Document, spans: tuple[Span, ...]) -> None:
        rows = [[s.start, s.end, s.label, s.source, s.score] for s in spans]
        self._fh.write(json.dumps([doc.id, len(doc.text), rows], ensure_ascii=False) + "\n")

    def start_replay(self) -> None:
        self._fh.seek(0)
        self._replaying = True
        self._advance()

    def _advance(self) -> None:
        line = self._fh.readline()
        self._next = json.loads(line) if line else None

    def take(self, doc: Document) -> tuple[Span, ...] | None:
        """The recorded spans of ``doc`` if it is the next recorded note, else None."""
        if self._next is None or self._next[0] != doc.id or self._next[1] != len(doc.text):
            return None
        spans = tuple(Span(a, b, label, source, score) for a, b, label, source, score in self._next[2])
        self._advance()
        self.reused += 1
        return spans

    def close(self) -> None:
        self._fh.close()


@dataclass
class Deidentifier:
    """A loaded model with its operator settings and secret; holds no note text."""

    model: DeidModel
    operators: OperatorConfig
    secret: bytes
    bias: float = 0.0
    keep_ids: bool = False  # write original ids, patient keys and sources (an explicit opt-in)
    allow_leaks: bool = False  # write a note even if its leak check fails (an explicit override)
    #: Where seeded PHI strings are masked and leak-checked: the note (``document``), the
    #: patient's notes (``patient``) or every note of the input (``corpus``).
    scope: Scope = "document"
    #: The marginal probability at which a tagged span seeds the patient/corpus scope
    #: (None: the model's ``propagate_min_score``).
    seed_min_score: float | None = None
    #: Set by a single-process run in patient or corpus scope: the first pass records
    #: each note's spans and the second replays them instead of tagging again.
    replay: SpanReplay | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.scope not in SCOPES:
            raise UnsupportedFormat(f"unknown scope {self.scope!r}: use {', '.join(SCOPES)}")
        # One surrogate generator per process; it is pure in (secret, patient, value, label).
        self._generator = self.operators.generator(self.secret)
        if self.seed_min_score is None:
            self.seed_min_score = float(self.model.config.propagate_min_score)

    @classmethod
    def from_model_dir(
        cls,
        model_dir: str,
        *,
        mode: str | None,
        secret: bytes,
        bias: float = 0.0,
        settings: Mapping[str, Any] | None = None,
        unknown_labels: str = "error",
        keep_ids: bool = False,
        allow_leaks: bool = False,
        propagate: bool = True,
        scope: Scope = "document",
        seed_min_score: float | None = None,
    ) -> Deidentifier:
        model = DeidModel.load(model_dir)
        model.propagate = model.propagate and propagate
        ops = operator_config(lang=model.lang, scheme=model.scheme.name, mode=mode, settings=settings)
        proc = cls(model, ops, secret, bias, keep_ids, allow_leaks, scope, seed_min_score)
        proc.check_surrogate_kinds(unknown_labels)
        return proc

    def check_surrogate_kinds(self, unknown_labels: str = "error") -> None:
        """Refuse surrogates for labels that have no surrogate kind, unless told to tag them.

        A model trained without a scheme maps every label to ``other``, and
        ``--mode surrogate`` would silently write tags instead of surrogates.
        """
        if unknown_labels not in ("error", "tag"):
            raise UnsupportedFormat("unknown_labels must be 'error' or 'tag'")
        if unknown_labels == "tag":
            return
        missing = sorted(
            label for label in self.model.scheme.names
            if self.operators.operator_for(label).kind == "surrogate"
            and self._generator.kind_of(label) == "other"
        )
        if missing:
            raise UnsupportedFormat(
                f"model {self.model.version} has label(s) with no surrogate kind:"
                f" {', '.join(missing)}; give them kinds (operators 'kinds:'), train with --scheme,"
                " or pass --unknown-labels tag to tag them instead"
            ).with_code("E_NO_SURROGATE_KIND")

    def predict(self, doc: Document) -> tuple[Span, ...]:
        """The model's spans for ``doc``, propagated within the note when propagation is on."""
        if self.replay is not None and self.replay.replaying:
            kept = self.replay.take(doc)
            if kept is not None:
                return kept
        spans = self._tag(doc)
        if self.replay is not None and not self.replay.replaying:
            self.replay.record(doc, spans)
        return spans

    def _tag(self, doc: Document) -> tuple[Span, ...]:
        spans = self.model.predict(doc, bias=self.bias).spans
        if self.model.propagate:
            # Whatever is masked once is masked everywhere in the note: the leak check
            # searches every replaced string, confident or not, so propagate them all.
            spans = tuple(propagate(doc.text, spans, self.model.scheme, lang=self.model.lang, min_score=0.0))
        return tuple(spans)

    @property
    def needs_known(self) -> bool:
        """Whether a first pass (``gather``) over the input must come before ``process``."""
        return self.scope != "document"

    def new_known(self) -> KnownPhi:
        return KnownPhi(self.operators.lang)

    def seeds(self, doc: Document) -> list[tuple[str, str]]:
        """``(label, string)`` of the note's spans that seed the patient/corpus scope:
        confident model tags and the record's ``known_phi`` that the operators replace
        (``KnownPhi`` keeps only identifying kinds)."""
        min_score = self.seed_min_score if self.seed_min_score is not None else 1.0
        trusted = [s for s in self.predict(doc) if s.source != PROPAGATED and is_trusted(s, min_score)]
        return replaced_values(doc.text, trusted, doc.meta, doc.id, self.operators)

    def add_seeds(
        self, known: KnownPhi, doc_id: str, patient_key: str | None, values: list[tuple[str, str]]
    ) -> None:
        """Add one note's seeds; notes must be added in input order for identical output."""
        add_values(known, doc_id, values, patient_of(patient_key, doc_id))

    def gather(self, known: KnownPhi, doc: Document, *, patient_key: str | None) -> None:
        """The first pass's step for one note."""
        self.add_seeds(known, doc.id, patient_key, self.seeds(doc))

    def _known_for(self, known: KnownPhi | None) -> KnownPhi | None:
        if self.scope == "document":
            return None
        if known is None:
            raise ValueError(f"scope {self.scope!r} needs the input's known PHI strings (gather them first)")
        return known

    def deidentify(
        self, doc: Document, *, patient_key: str | None, known: KnownPhi | None = None
    ) -> DeidentifiedDocument:
        return self._deidentify(doc, patient_key, self._known_for(known))[0]

    def _deidentify(
        self, doc: Document, patient_key: str | None, known: KnownPhi | None
    ) -> tuple[DeidentifiedDocument, list[Span]]:
        spans = self.predict(doc)
        masked: list[Span] = []
        avoid = None
        if known is not None:
            patient = patient_of(patient_key, doc.id)
            if self.model.propagate:
                masked = mask_in_scope(doc, spans, known, patient, self.scope, self.operators)
                spans = tuple(sort_spans([*spans, *masked]))
            avoid = lambda value: known.is_original_of(value, patient)  # noqa: E731
        result = deidentify_document(
            doc,
            spans,
            config=self.operators,
            secret=self.secret,
            patient_key=patient_key,
            generator=self._generator,
            avoid=avoid,
        )
        return result, masked

    def to_record(self, result: DeidentifiedDocument) -> dict[str, Any]:
        out = result.to_document().with_meta(model_version=self.model.version, bias=self.bias)
        if not self.keep_ids:
            new_id, meta = pseudonymise_meta(out.meta, self.secret, out.id)
            out = Document(new_id, out.text, out.spans, meta)
        return document_to_dict(out)

    def leak_check(
        self,
        doc: Document,
        result: DeidentifiedDocument,
        meta: Mapping[str, Any] | None = None,
        known: KnownPhi | None = None,
    ) -> LeakReport:
        """The note's own originals and their variants, searched in its text and ``meta``,
        and, in patient or corpus scope, the scope's seeded strings."""
        known = self._known_for(known)
        checker = LeakChecker(lang=self.operators.lang, scope=self.scope if known else "document", known=known)
        checker.check(doc, result, meta=meta)
        return checker.report

    def process(self, doc: Document, *, patient_key: str | None, known: KnownPhi | None = None) -> NoteOutcome:
        """De-identify and leak-check one note: a record, or a reject naming offsets.

        In patient or corpus scope, ``known`` is the first pass's ``KnownPhi``."""
        known = self._known_for(known)
        result, masked = self._deidentify(doc, patient_key, known)
        record = self.to_record(result)
        report = self.leak_check(doc, result, meta=record["meta"], known=known)
        hits = tuple(
            {"start": h.start, "end": h.end, "field": h.field, "label": h.label, "match": h.match}
            for h in report.leaks
        )
        n_prop = sum(1 for d in result.decisions if d.original.source == PROPAGATED)
        if hits and not self.allow_leaks:
            first = hits[0]
            reason = (
                f"leak check: {len(hits)} original PHI string(s) remain (first at {first['field']}"
                f" {first['start']}..{first['end']}, {first['label']}, {first['match']}); not written"
            )
            return NoteOutcome(doc.id, None, reason, hits, len(result.spans), n_prop)
        where = tuple((s.start, s.end, s.label) for s in masked)
        return NoteOutcome(doc.id, record, None, hits, len(result.spans), n_prop, where)

    def deidentify_record(
        self, doc: Document, *, patient_key: str | None, known: KnownPhi | None = None
    ) -> dict[str, Any]:
        return self.to_record(self.deidentify(doc, patient_key=patient_key, known=known))
