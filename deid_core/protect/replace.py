"""Apply replacements to a note and keep a map between new and original offsets.

Replacement runs from the end of the text backwards (as Presidio's
``TextReplaceBuilder`` does), so that earlier offsets stay valid while later
ones change. The returned ``OffsetMap`` is what lets a de-identified corpus be
linked back to reviewed annotations (and lets a reviewer's click on the
de-identified text find the original span) without storing the original text
anywhere in the export.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from deid_core.errors import InvalidSpan
from deid_core.spans import Span, check_no_overlap

Side = Literal["start", "end"]


@dataclass(frozen=True, slots=True)
class Replacement:
    """``span`` (over the original text) becomes ``text`` in the new text."""

    span: Span
    text: str


@dataclass(frozen=True, slots=True)
class Segment:
    """One replaced region: ``[src_start, src_end)`` became ``[dst_start, dst_end)``."""

    src_start: int
    src_end: int
    dst_start: int
    dst_end: int


@dataclass(frozen=True)
class OffsetMap:
    """Maps offsets of a source text to a destination text that differs in replaced regions.

    Outside replaced regions the mapping is a shift; inside one, an offset maps
    to the start or end of the corresponding region (``side``), so a span
    mapped with ``map_span`` always covers the whole replacement it touches.
    Maps are for ``original -> new`` when produced by ``apply_replacements``;
    ``inverse()`` gives ``new -> original``.
    """

    segments: tuple[Segment, ...]
    src_length: int
    dst_length: int

    def __post_init__(self) -> None:
        prev_src = prev_dst = 0
        for seg in self.segments:
            if not (prev_src <= seg.src_start < seg.src_end and prev_dst <= seg.dst_start < seg.dst_end):
                raise InvalidSpan("offset map segments must be ordered and non-overlapping")
            if seg.src_start - prev_src != seg.dst_start - prev_dst:
                raise InvalidSpan(
                    f"offset map segment at {seg.src_start} does not keep the text between"
                    " segments unchanged"
                )
            prev_src, prev_dst = seg.src_end, seg.dst_end
        if self.src_length - prev_src != self.dst_length - prev_dst or prev_src > self.src_length:
            raise InvalidSpan("offset map lengths do not agree with its segments")
        object.__setattr__(self, "_starts", [s.src_start for s in self.segments])

    @classmethod
    def identity(cls, length: int) -> OffsetMap:
        return cls((), length, length)

    def inverse(self) -> OffsetMap:
        return OffsetMap(
            tuple(Segment(s.dst_start, s.dst_end, s.src_start, s.src_end) for s in self.segments),
            self.dst_length,
            self.src_length,
        )

    def map(self, offset: int, side: Side = "start") -> int:
        """Map a source offset to the destination; inside a region, snap to its ``side``."""
        if not isinstance(offset, int) or offset < 0 or offset > self.src_length:
            raise InvalidSpan(f"offset {offset} is outside 0..{self.src_length}")
        starts: list[int] = self._starts  # type: ignore[attr-defined]
        i = bisect_right(starts, offset) - 1
        if i < 0:
            return offset
        seg = self.segments[i]
        if offset == seg.src_start:
            return seg.dst_start
        if offset < seg.src_end:
            return seg.dst_start if side == "start" else seg.dst_end
        return seg.dst_end + (offset - seg.src_end)

    def map_span(self, span: Span) -> Span:
        start = self.map(span.start, "start")
        end = self.map(span.end, "end")
        if end <= start:
            raise InvalidSpan(f"span {span.start}..{span.end} ({span.label}) maps to an empty span")
        return Span(start, end, span.label, span.source, span.score)

    def to_dict(self) -> dict[str, Any]:
        """JSON form: only the replaced regions, as ``[src_start, src_end, dst_start, dst_end]``."""
        return {
            "src_length": self.src_length,
            "dst_length": self.dst_length,
            "segments": [[s.src_start, s.src_end, s.dst_start, s.dst_end] for s in self.segments],
        }

    @classmethod
    def from_dict(cls, raw: Any) -> OffsetMap:
        try:
            segments = tuple(Segment(*(int(x) for x in seg)) for seg in raw["segments"])
            return cls(segments, int(raw["src_length"]), int(raw["dst_length"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidSpan(f"malformed offset map ({type(exc).__name__})") from None


@dataclass(frozen=True, slots=True)
class ReplaceResult:
    text: str
    spans: tuple[Span, ...]  # the replaced spans, over the new text, same order as input sorted
    offset_map: OffsetMap  # original -> new


def apply_replacements(
    text: str, replacements: Sequence[Replacement], *, doc_id: str | None = None
) -> ReplaceResult:
    """Replace each span's characters; spans must fit the text and must not overlap.

    Raises ``InvalidSpan`` for an out-of-range span or an empty replacement (an
    empty string leaves no span to point at) and ``OverlappingSpans`` for
    overlaps; the errors name offsets and labels, never text.
    """
    n = len(text)
    for rep in replacements:
        rep.span.check_fits(n, doc_id=doc_id)
        if not rep.text:
            where = f"document {doc_id!r}: " if doc_id is not None else ""
            raise InvalidSpan(
                f"{where}replacement for span {rep.span.start}..{rep.span.end}"
                f" ({rep.span.label}) is empty"
            )
    check_no_overlap([r.span for r in replacements], doc_id=doc_id)
    ordered = sorted(replacements, key=lambda r: r.span.start)
    # Build back to front, as Presidio does, so each slice uses original offsets.
    pieces: list[str] = []
    cursor = n
    for rep in reversed(ordered):
        pieces.append(text[rep.span.end : cursor])
        pieces.append(rep.text)
        cursor = rep.span.start
    pieces.append(text[:cursor])
    new_text = "".join(reversed(pieces))
    segments: list[Segment] = []
    spans: list[Span] = []
    delta = 0
    for rep in ordered:
        s = rep.span
        dst_start = s.start + delta
        dst_end = dst_start + len(rep.text)
        segments.append(Segment(s.start, s.end, dst_start, dst_end))
        spans.append(Span(dst_start, dst_end, s.label, s.source, s.score))
        delta += len(rep.text) - len(s)
    return ReplaceResult(new_text, tuple(spans), OffsetMap(tuple(segments), n, len(new_text)))
