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
    """

    priority: tuple[str, ...] = DEFAULT_PRIORITY

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
    for span in ordered:
        i = bisect.bisect_right(starts, span.start)
        # Only the neighbours can overlap: the accepted span starting at or before
        # this one, and the one starting after it.
        if i > 0 and ends[i - 1] > span.start:
            continue
        if i < len(starts) and starts[i] < span.end:
            continue
        starts.insert(i, span.start)
        ends.insert(i, span.end)
        accepted.append(span)
    return sort_spans(accepted)
