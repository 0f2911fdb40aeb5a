"""What happens to each PHI span on export: tag, redact, surrogate or keep, per label.

``OperatorConfig`` is plain data (``to_dict``/``from_dict``), so a project can
store it in the database and a manifest can record exactly what was applied.
``deidentify_document`` is the one pure function that turns a note and its
spans into de-identified text: same inputs give byte-identical output, with no
dependence on processing order, so corpus partitions processed on separate
workers agree without shared state (surrogates and date shifts are derived
from the secret, never from a counter).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from deid_core.errors import UnsupportedFormat
from deid_core.protect.dateshift import DEFAULT_MAX_DAYS
from deid_core.protect.replace import OffsetMap, Replacement, apply_replacements
from deid_core.protect.surrogate_map import MappingEntry, SurrogateMapping, normalise, pseudonym
from deid_core.protect.surrogates import IDENTIFYING_KINDS, KINDS, SurrogateGenerator
from deid_core.spans import Document, Span, check_no_overlap, sort_spans

OperatorKind = Literal["tag", "redact", "surrogate", "keep"]
OPERATOR_KINDS = ("tag", "redact", "surrogate", "keep")
#: Meta keys copied to de-identified documents; anything else might carry PHI
#: (file names, free-text notes), so it is dropped unless a project adds it.
DEFAULT_KEEP_META = ("source", "split", "synthetic", "kind", "generator", "lang")


@dataclass(frozen=True, slots=True)
class OperatorSpec:
    """One operator. ``template`` is for tag (``{label}`` is the only field);
    ``mask`` is redact's fixed mask; ``mask_char`` switches redact to a mask of
    the same length (whitespace inside the span is kept, so layout survives)."""

    kind: OperatorKind = "surrogate"
    template: str = "[**{label}**]"
    mask: str = "[REDACTED]"
    mask_char: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in OPERATOR_KINDS:
            raise UnsupportedFormat(
                f"unknown operator {self.kind!r} (use one of {', '.join(OPERATOR_KINDS)})"
            )
        try:
            rendered = self.template.format(label="X")
        except (KeyError, IndexError, ValueError) as exc:
            raise UnsupportedFormat(
                f"tag template may only use the field {{label}} ({type(exc).__name__})"
            ) from None
        if not rendered:
            raise UnsupportedFormat("tag template renders an empty string")
        if not self.mask:
            raise UnsupportedFormat("redact mask must not be empty")
        if self.mask_char is not None and (len(self.mask_char) != 1 or self.mask_char.isspace()):
            raise UnsupportedFormat("redact mask_char must be one visible character")

    def render(self, label: str, value: str) -> str:
        """Output of tag and redact (which never look at the value's content)."""
        if self.kind == "tag":
            return self.template.format(label=label)
        if self.kind == "redact":
            if self.mask_char is None:
                return self.mask
            return "".join(c if c.isspace() else self.mask_char for c in value)
        raise ValueError(f"{self.kind} is not rendered from a template")

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}

    @classmethod
    def from_dict(cls, raw: Any) -> OperatorSpec:
        if isinstance(raw, str):
            return cls(raw)  # type: ignore[arg-type]
        if not isinstance(raw, Mapping):
            raise UnsupportedFormat("an operator must be a name or a mapping")
        unknown = set(raw) - {"kind", "template", "mask", "mask_char"}
        if unknown:
            raise UnsupportedFormat(f"unknown operator option(s): {', '.join(sorted(unknown))}")
        return cls(**dict(raw))


@dataclass(frozen=True)
class OperatorConfig:
    """Per-project de-identification settings.

    ``fallback`` is used when a surrogate cannot be made (a date that does not
    parse, a label with no surrogate kind): it must hide the value, so only
    tag and redact are allowed. ``consistency`` is the surrogate scope
    (``patient`` or ``corpus``); dates always shift per patient.
    """

    lang: str = "en"
    scheme: str | None = None
    default: OperatorSpec = field(default_factory=OperatorSpec)
    per_label: Mapping[str, OperatorSpec] = field(default_factory=dict)
    fallback: OperatorSpec = field(default_factory=lambda: OperatorSpec("tag"))
    consistency: Literal["patient", "corpus"] = "patient"
    max_shift_days: int = DEFAULT_MAX_DAYS
    kinds: Mapping[str, str] = field(default_factory=dict)
    keep_meta: tuple[str, ...] = DEFAULT_KEEP_META

    def __post_init__(self) -> None:
        if self.fallback.kind not in ("tag", "redact"):
            raise UnsupportedFormat("the fallback operator must be tag or redact")
        if self.consistency not in ("patient", "corpus"):
            raise UnsupportedFormat("consistency must be 'patient' or 'corpus'")
        if not 1 <= self.max_shift_days <= 3650:
            raise UnsupportedFormat("max_shift_days must be between 1 and 3650")
        bad = {k for k in self.kinds.values() if k not in KINDS}
        if bad:
            raise UnsupportedFormat(f"unknown surrogate kind(s): {', '.join(sorted(bad))}")
        object.__setattr__(self, "per_label", dict(self.per_label))
        object.__setattr__(self, "kinds", dict(self.kinds))
        object.__setattr__(self, "keep_meta", tuple(self.keep_meta))

    def operator_for(self, label: str) -> OperatorSpec:
        return self.per_label.get(label, self.default)

    @classmethod
    def for_mode(
        cls, mode: str, *, lang: str = "en", scheme: str | None = None, **kwargs: Any
    ) -> OperatorConfig:
        """The CLI's ``--mode``: one operator for every label."""
        return cls(lang=lang, scheme=scheme, default=OperatorSpec(mode), **kwargs)  # type: ignore[arg-type]

    def to_dict(self) -> dict[str, Any]:
        return {
            "lang": self.lang,
            "scheme": self.scheme,
            "default": self.default.to_dict(),
            "per_label": {k: v.to_dict() for k, v in sorted(self.per_label.items())},
            "fallback": self.fallback.to_dict(),
            "consistency": self.consistency,
            "max_shift_days": self.max_shift_days,
            "kinds": dict(sorted(self.kinds.items())),
            "keep_meta": list(self.keep_meta),
        }

    @classmethod
    def from_dict(cls, raw: Any) -> OperatorConfig:
        if not isinstance(raw, Mapping):
            raise UnsupportedFormat("operator configuration must be a mapping")
        known = {
            "lang", "scheme", "default", "per_label", "fallback", "consistency",
            "max_shift_days", "kinds", "keep_meta",
        }
        unknown = set(raw) - known
        if unknown:
            raise UnsupportedFormat(f"unknown operator setting(s): {', '.join(sorted(unknown))}")
        args: dict[str, Any] = {k: raw[k] for k in ("lang", "scheme", "consistency") if k in raw}
        if "max_shift_days" in raw:
            args["max_shift_days"] = int(raw["max_shift_days"])
        if "default" in raw:
            args["default"] = OperatorSpec.from_dict(raw["default"])
        if "fallback" in raw:
            args["fallback"] = OperatorSpec.from_dict(raw["fallback"])
        if "per_label" in raw:
            if not isinstance(raw["per_label"], Mapping):
                raise UnsupportedFormat("per_label must map labels to operators")
            args["per_label"] = {str(k): OperatorSpec.from_dict(v) for k, v in raw["per_label"].items()}
        if "kinds" in raw:
            args["kinds"] = {str(k): str(v) for k, v in dict(raw["kinds"]).items()}
        if "keep_meta" in raw:
            args["keep_meta"] = tuple(str(k) for k in raw["keep_meta"])
        return cls(**args)

    def generator(self, secret: bytes) -> SurrogateGenerator:
        return SurrogateGenerator(
            secret,
            self.lang,
            scheme=self.scheme,
            kinds=self.kinds,
            consistency=self.consistency,
            max_shift_days=self.max_shift_days,
        )


@dataclass(frozen=True, slots=True)
class SpanDecision:
    """What was done to one span: ``operator`` is the one applied (after any
    fallback), ``status`` is ``replaced`` or ``kept`` (keep, or a surrogate
    equal to its value such as an age under 90)."""

    original: Span
    new: Span
    operator: str
    kind: str | None
    status: str


@dataclass(frozen=True)
class DeidentifiedDocument:
    doc_id: str
    text: str
    spans: tuple[Span, ...]  # every input span, over the new text
    decisions: tuple[SpanDecision, ...]
    offset_map: OffsetMap  # original -> new
    patient_key: str | None
    mapping_entries: tuple[MappingEntry, ...]
    meta: Mapping[str, Any]

    def to_document(self) -> Document:
        return Document(self.doc_id, self.text, self.spans, dict(self.meta))

    def operator_counts(self) -> dict[str, int]:
        return dict(sorted(Counter(d.operator for d in self.decisions).items()))


def deidentify_document(
    doc: Document,
    spans: Sequence[Span],
    *,
    config: OperatorConfig | Any,
    secret: bytes,
    patient_key: str | None,
    mapping: SurrogateMapping | None = None,
    generator: SurrogateGenerator | None = None,
    avoid: Callable[[str], bool] | None = None,
) -> DeidentifiedDocument:
    """De-identify one note. Pure: the output depends only on the arguments.

    ``config`` is an ``OperatorConfig`` or anything with an ``operators``
    attribute holding one (an ``ExportConfig``). A document without a patient
    key is its own patient (its id is used for date offsets and the
    consistency scope). ``mapping``, if given, receives the surrogates used;
    the same entries are on the result for callers that collect them later.
    Spans must fit the text and must not overlap (``InvalidSpan`` /
    ``OverlappingSpans`` otherwise, naming offsets and labels only).
    A surrogate equal to another original of an identifying kind in the note, or
    one for which ``avoid`` is true (the export passes the patient's other
    originals), is not used: the fallback operator applies instead.
    """
    ops: OperatorConfig = config if isinstance(config, OperatorConfig) else config.operators
    gen = generator if generator is not None else ops.generator(secret)
    key = patient_key if patient_key is not None else doc.id
    ordered = sort_spans(spans)
    for span in ordered:
        span.check_fits(len(doc.text), doc_id=doc.id)
    check_no_overlap(ordered, doc_id=doc.id)
    replacements: list[Replacement] = []
    plan: list[tuple[Span, str, str | None, str]] = []
    entries: list[MappingEntry] = []
    # A surrogate equal to another original of an identifying kind in this note
    # would put someone else's real name (or id) into the output: such a draw
    # gets the fallback instead (the leak check reports it as a collision).
    originals = {
        normalise(doc.text[s.start : s.end]) for s in ordered if gen.kind_of(s.label) in IDENTIFYING_KINDS
    }
    for span in ordered:
        value = doc.text[span.start : span.end]
        spec = ops.operator_for(span.label)
        kind: str | None = None
        if spec.kind == "keep":
            plan.append((span, "keep", None, "kept"))
            continue
        if spec.kind == "surrogate":
            sur = gen.generate(value, span.label, patient_key=key)
            kind = sur.kind
            folded = normalise(sur.text) if sur.text is not None else ""
            clash = folded != normalise(value) and (
                folded in originals or (avoid is not None and sur.text is not None and avoid(sur.text))
            )
            if sur.text is not None and not clash:
                if sur.entry is not None:
                    entries.append(sur.entry)
                if sur.text == value:
                    plan.append((span, "surrogate", kind, "kept"))
                else:
                    replacements.append(Replacement(span, sur.text))
                    plan.append((span, "surrogate", kind, "replaced"))
                continue
            spec = ops.fallback
        replacements.append(Replacement(span, spec.render(span.label, value)))
        plan.append((span, spec.kind, kind, "replaced"))
    result = apply_replacements(doc.text, replacements, doc_id=doc.id)
    omap = result.offset_map
    decisions = tuple(
        SpanDecision(span, omap.map_span(span), op, kind, status) for span, op, kind, status in plan
    )
    if mapping is not None and entries:
        mapping.record(entries)
    # Identifiers from the record (meta.known_phi) never leave, whatever keep_meta says.
    meta: dict[str, Any] = {k: doc.meta[k] for k in ops.keep_meta if k in doc.meta and k != "known_phi"}
    meta["original_id"] = doc.id
    meta["patient_key"] = patient_key
    meta["deidentified"] = True
    return DeidentifiedDocument(
        doc.id,
        result.text,
        tuple(d.new for d in decisions),
        decisions,
        omap,
        patient_key,
        tuple(entries),
        meta,
    )


def pseudonymise_meta(meta: Mapping[str, Any], secret: bytes, doc_id: str) -> tuple[str, dict[str, Any]]:
    """``(new id, new meta)`` of a de-identified document with HMAC pseudonyms for its
    id, ``original_id``, ``patient_key`` and ``source``: those come from the record
    (an MRN, a file path holding a name) and no span covers them."""
    out = dict(meta)
    new_id = pseudonym(secret, "document", doc_id)
    out["original_id"] = new_id
    if out.get("patient_key") is not None:
        out["patient_key"] = pseudonym(secret, "patient", str(out["patient_key"]))
    if out.get("source") is not None:
        out["source"] = pseudonym(secret, "source", str(out["source"]))
    out["ids"] = "pseudonymised"
    return new_id, out


def patient_key_from_meta(doc: Document, path: str | None) -> str | None:
    """Resolve ``meta.patient_id``-style paths (dots walk nested objects)."""
    if not path:
        return None
    parts = path.split(".")
    if parts[0] == "meta":
        parts = parts[1:]
    value: Any = doc.meta
    for part in parts:
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return None if value is None else str(value)
