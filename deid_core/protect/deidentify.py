"""Automatic de-identification of one note: model -> operators -> shared JSONL record.

The single-process ``deidentify`` command and the Dask batch workers both call
``Deidentifier.deidentify_record``, so the two paths cannot drift apart: for
the same model, settings, secret and note they produce the same bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from deid_core.corpus import document_to_dict
from deid_core.engine.model import DeidModel
from deid_core.errors import UnsupportedFormat
from deid_core.protect.leakcheck import LeakReport, check_deidentified
from deid_core.protect.operators import DeidentifiedDocument, OperatorConfig, deidentify_document
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


@dataclass
class Deidentifier:
    """A loaded model with its operator settings and secret; holds no note text."""

    model: DeidModel
    operators: OperatorConfig
    secret: bytes
    bias: float = 0.0

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
    ) -> Deidentifier:
        model = DeidModel.load(model_dir)
        ops = operator_config(lang=model.lang, scheme=model.scheme.name, mode=mode, settings=settings)
        proc = cls(model, ops, secret, bias)
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
        return deidentify_document(
            doc,
            pred.spans,
            config=self.operators,
            secret=self.secret,
            patient_key=patient_key,
            generator=self._generator,
        )

    def to_record(self, result: DeidentifiedDocument) -> dict[str, Any]:
        out = result.to_document().with_meta(model_version=self.model.version, bias=self.bias)
        return document_to_dict(out)

    def leak_check(self, doc: Document, result: DeidentifiedDocument) -> LeakReport:
        return check_deidentified([(doc, result)], lang=self.operators.lang)

    def deidentify_record(self, doc: Document, *, patient_key: str | None) -> dict[str, Any]:
        return self.to_record(self.deidentify(doc, patient_key=patient_key))
