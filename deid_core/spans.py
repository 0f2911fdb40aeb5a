"""The one span type and the document that carries it.

Offsets are Python string (code point) offsets into the untouched note, end
exclusive, as in spaCy and Presidio. Spans are frozen so that pipeline stages
can share them without copying (Presidio's mutable results force copies).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from deid_core.errors import InvalidSpan, OverlappingSpans


@dataclass(frozen=True, slots=True)
class Span:
    start: int
    end: int
    label: str
    source: str = "gold"  # "rule:<name>" | "crf:<model-version>" | "human:<user>" | "gold"
    score: float = 1.0  # marginal probability, rule confidence, or 1.0 for a human

    def __post_init__(self) -> None:
        if not isinstance(self.start, int) or not isinstance(self.end, int):
            raise InvalidSpan(f"span offsets must be integers, got {self.start!r}..{self.end!r}")
        if self.start < 0 or self.start >= self.end:
            raise InvalidSpan(
                f"span offsets must satisfy 0 <= start < end, got {self.start}..{self.end}"
                f" ({self.label})"
            )
        if not self.label:
            raise InvalidSpan(f"span {self.start}..{self.end} has an empty label")

    def __len__(self) -> int:
        return self.end - self.start

    @property
    def key(self) -> tuple[int, int, str]:
        """Identity for evaluation and de-duplication: provenance is ignored."""
        return (self.start, self.end, self.label)

    def overlaps(self, other: Span) -> bool:
        return self.start < other.end and other.start < self.end

    def with_label(self, label: str) -> Span:
        return replace(self, label=label)

    def check_fits(self, text_length: int, *, doc_id: str | None = None) -> None:
        if self.end > text_length:
            where = f"document {doc_id!r}: " if doc_id is not None else ""
            raise InvalidSpan(
                f"{where}span {self.start}..{self.end} ({self.label}) ends past the text"
                f" (length {text_length})"
            )


def sort_spans(spans: Iterable[Span]) -> list[Span]:
    """Deterministic order used everywhere: by start, then end, then label."""
    return sorted(spans, key=lambda s: (s.start, s.end, s.label, s.source))


def find_overlap(spans: Sequence[Span]) -> tuple[Span, Span] | None:
    """Return the first pair of overlapping spans in start order, if any."""
    ordered = sort_spans(spans)
    for a, b in zip(ordered, ordered[1:]):
        if a.overlaps(b):
            return a, b
    return None


def check_no_overlap(spans: Sequence[Span], *, doc_id: str | None = None) -> None:
    pair = find_overlap(spans)
    if pair is not None:
        a, b = pair
        where = f"document {doc_id!r}: " if doc_id is not None else ""
        raise OverlappingSpans(
            f"{where}spans {a.start}..{a.end} ({a.label}) and {b.start}..{b.end} ({b.label})"
            " overlap"
        )


@dataclass(frozen=True, slots=True)
class Document:
    id: str
    text: str
    spans: tuple[Span, ...] = ()
    meta: dict[str, Any] = field(default_factory=dict, hash=False, compare=True)

    def __post_init__(self) -> None:
        if not isinstance(self.spans, tuple):
            object.__setattr__(self, "spans", tuple(self.spans))
        n = len(self.text)
        for span in self.spans:
            span.check_fits(n, doc_id=self.id)

    def span_text(self, span: Span) -> str:
        return self.text[span.start : span.end]

    def with_spans(self, spans: Iterable[Span]) -> Document:
        return Document(self.id, self.text, tuple(sort_spans(spans)), dict(self.meta))

    def with_meta(self, **updates: Any) -> Document:
        meta = dict(self.meta)
        meta.update(updates)
        return Document(self.id, self.text, self.spans, meta)
