"""Automatic de-identification of one note: model -> operators -> leak check -> record.

The single-process ``deidentify`` command and the Dask batch workers both call
``Deidentifier.process``, so the two paths cannot drift apart: for the same
model, settings, secret and note they produce the same bytes, and the same
notes are rejected for the same reasons. The model propagates known PHI
within the note (``engine/propagate.py``); ids, patient keys and source paths
are written as HMAC pseudonyms unless ``keep_ids``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from deid_core.corpus import document_to_dict
from deid_core.engine.model import DeidModel
from deid_core.engine.propagate import SOURCE as PROPAGATED
from deid_core.engine.propagate import propagate
from deid_core.errors import UnsupportedFormat
from deid_core.protect.leakcheck import LeakChecker, LeakReport
from deid_core.protect.operators import (
    DeidentifiedDocument,
    OperatorConfig,
    deidentify_document,
    pseudonymise_meta,
)
from deid_core.spans import Document


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


@dataclass
class Deidentifier:
    """A loaded model with its operator settings and secret; holds no note text."""

    model: DeidModel
    operators: OperatorConfig
    secret: bytes
    bias: float = 0.0
    keep_ids: bool = False  # write original ids, patient keys and sources (an explicit opt-in)
    allow_leaks: bool = False  # write a note even if its leak check fails (an explicit override)

    def __post_init__(self) -> None:
        # One surrogate generator per process; it is pure in (secret, patient, value, label).
        self._generator = self.operators.generator(self.secret)

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
    ) -> Deidentifier:
        model = DeidModel.load(model_dir)
        model.propagate = model.propagate and propagate
        ops = operator_config(lang=model.lang, scheme=model.scheme.name, mode=mode, settings=settings)
        proc = cls(model, ops, secret, bias, keep_ids, allow_leaks)
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

    def deidentify(self, doc: Document, *, patient_key: str | None) -> DeidentifiedDocument:
        pred = self.model.predict(doc, bias=self.bias)
        spans = pred.spans
        if self.model.propagate:
            # Whatever is masked once is masked everywhere in the note: the leak check
            # searches every replaced string, confident or not, so propagate them all.
            spans = tuple(propagate(doc.text, spans, self.model.scheme, lang=self.model.lang, min_score=0.0))
        return deidentify_document(
            doc,
            spans,
            config=self.operators,
            secret=self.secret,
            patient_key=patient_key,
            generator=self._generator,
        )

    def to_record(self, result: DeidentifiedDocument) -> dict[str, Any]:
        out = result.to_document().with_meta(model_version=self.model.version, bias=self.bias)
        if not self.keep_ids:
            new_id, meta = pseudonymise_meta(out.meta, self.secret, out.id)
            out = Document(new_id, out.text, out.spans, meta)
        return document_to_dict(out)

    def leak_check(
        self, doc: Document, result: DeidentifiedDocument, meta: Mapping[str, Any] | None = None
    ) -> LeakReport:
        """The note's own originals and their variants, searched in its text and ``meta``."""
        checker = LeakChecker(lang=self.operators.lang, scope="document")
        checker.check(doc, result, meta=meta)
        return checker.report

    def process(self, doc: Document, *, patient_key: str | None) -> NoteOutcome:
        """De-identify and leak-check one note: a record, or a reject naming offsets."""
        result = self.deidentify(doc, patient_key=patient_key)
        record = self.to_record(result)
        report = self.leak_check(doc, result, meta=record["meta"])
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
        return NoteOutcome(doc.id, record, None, hits, len(result.spans), n_prop)

    def deidentify_record(self, doc: Document, *, patient_key: str | None) -> dict[str, Any]:
        return self.to_record(self.deidentify(doc, patient_key=patient_key))
