"""Resolve overlapping spans from several detectors into one layer.

Paper 000 (section 3.4): spans that overlap nothing are kept; among
overlapping ones the rule-based result wins over the character-level CRF,
which wins over the token-level CRF. The detector is read from the span's
``source`` prefix (``"rule:phone"`` -> ``"rule"``). Ties inside one detector
are broken as spaCy's ``filter_spans`` does (longest, then earliest), then by
score, so the output never depends on input order.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from deid_core.spans import Span, sort_spans

DEFAULT_PRIORITY: tuple[str, ...] = ("rule", "charcrf", "crf")


@dataclass(frozen=True, slots=True)
class MergeConfig:
    """Which detectors win overlaps, first to last; unlisted detectors rank after all listed.

    A caller that merges reviewer corrections puts ``"human"`` first.
    ``keep_remainders`` favours recall over the paper's rule: the parts of a
    losing span that no winner covers are kept (with the loser's label), so
    that a short rule match inside a long CRF span does not un-mark the rest
    of it. Off by default, as in paper 000.
    """

    priority: tuple[str, ...] = DEFAULT_PRIORITY
    keep_remainders: bool = False

    def rank(self, source: str) -> int:
        prefix = source.split(":", 1)[0]
        try:
            return self.priority.index(prefix)
        except ValueError:
            return len(self.priority)


def _selection_key(span: Span, config: MergeConfig) -> tuple:
    # Every field takes part so that equal-ranked spans still order deterministically.
    return (
        config.rank(span.source),
        -(span.end - span.start),
        span.start,
        -span.score,
        span.label,
        span.source,
    )


def merge_spans(
    spans: Iterable[Span],
    priority: Sequence[str] | MergeConfig = DEFAULT_PRIORITY,
) -> list[Span]:
    """Non-overlapping, sorted selection: greedy in (priority, longer, earlier, higher score).

    Greedy selection means a low-priority span that overlaps only a *rejected*
    span survives: A(rule) beats B(crf), and C(crf), which overlaps B but not
    A, is still kept. Exact duplicates collapse to the best-ranked copy.
    """
    config = priority if isinstance(priority, MergeConfig) else MergeConfig(tuple(priority))
    ordered = sorted(spans, key=lambda s: _selection_key(s, config))
    starts: list[int] = []  # accepted spans, kept sorted by start; they never overlap
    ends: list[int] = []
    accepted: list[Span] = []
    rejected: list[Span] = []
    for span in ordered:
        i = bisect.bisect_right(starts, span.start)
        # Only the neighbours can overlap: the accepted span starting at or before
        # this one, and the one starting after it.
        if (i > 0 and ends[i - 1] > span.start) or (i < len(starts) and starts[i] < span.end):
            rejected.append(span)
            continue
        starts.insert(i, span.start)
        ends.insert(i, span.end)
        accepted.append(span)
    if config.keep_remainders:
        # Second pass, in the same order: whatever of a loser is still unmarked.
        for span in rejected:
            for piece in _uncovered(span, starts, ends):
                i = bisect.bisect_right(starts, piece.start)
                starts.insert(i, piece.start)
                ends.insert(i, piece.end)
                accepted.append(piece)
    return sort_spans(accepted)


def _uncovered(span: Span, starts: list[int], ends: list[int]) -> list[Span]:
    """The parts of ``span`` outside the accepted intervals (which never overlap)."""
    pieces = []
    cursor = span.start
    i = max(0, bisect.bisect_right(starts, span.start) - 1)
    while i < len(starts) and starts[i] < span.end:
        if ends[i] > cursor:
            if starts[i] > cursor:
                pieces.append((cursor, starts[i]))
            cursor = max(cursor, ends[i])
        i += 1
    if cursor < span.end:
        pieces.append((cursor, span.end))
    return [Span(a, b, span.label, span.source, span.score) for a, b in pieces if b > a]

