"""Spans <-> BIO/BIOES tags: the one tested pair of conversion functions.

Modelled on spaCy's ``offsets_to_biluo_tags``/``biluo_tags_to_offsets``. A span
whose edges fall inside a token cannot be expressed as tags; it is reported in
``Alignment.misaligned`` (and, with ``snap=True``, widened to the tokens it
touches) but never silently turned into ``O``.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

from deid_core.engine.tokenize import Token
from deid_core.errors import MisalignedSpan
from deid_core.spans import Span, sort_spans

OUTSIDE = "O"
SCHEMES = ("BIO", "BIOES")


@dataclass(frozen=True, slots=True)
class Alignment:
    tags: list[str]
    misaligned: list[Span]  # spans whose edges are not token edges (as given, before snapping)
    dropped: list[Span]  # spans that cover no token at all, or overlap an earlier span


def _token_range(starts: list[int], ends: list[int], span: Span) -> tuple[int, int]:
    """Token indices [i, j) of tokens that intersect the span."""
    i = bisect_right(ends, span.start)  # first token ending after span.start
    j = bisect_left(starts, span.end)  # first token starting at/after span.end
    return i, j


def spans_to_tags(
    tokens: Sequence[Token],
    spans: Sequence[Span],
    scheme: str = "BIO",
    *,
    snap: bool = True,
) -> Alignment:
    """Tag each token. ``snap=False`` raises ``MisalignedSpan`` on the first misaligned span."""
    if scheme not in SCHEMES:
        raise ValueError(f"unknown tag scheme {scheme!r}")
    starts = [t.start for t in tokens]
    ends = [t.end for t in tokens]
    tags = [OUTSIDE] * len(tokens)
    misaligned: list[Span] = []
    dropped: list[Span] = []
    for span in sort_spans(spans):
        i, j = _token_range(starts, ends, span)
        if i >= j:
            dropped.append(span)
            continue
        if starts[i] != span.start or ends[j - 1] != span.end:
            if not snap:
                raise MisalignedSpan(
                    f"span {span.start}..{span.end} ({span.label}) does not align with token"
                    f" boundaries (nearest tokens cover {starts[i]}..{ends[j - 1]})"
                )
            misaligned.append(span)
        if any(tags[k] != OUTSIDE for k in range(i, j)):
            dropped.append(span)
            continue
        if scheme == "BIOES" and j - i == 1:
            tags[i] = f"S-{span.label}"
            continue
        tags[i] = f"B-{span.label}"
        for k in range(i + 1, j):
            tags[k] = f"I-{span.label}"
        if scheme == "BIOES":
            tags[j - 1] = f"E-{span.label}"
    return Alignment(tags, misaligned, dropped)


def tags_to_spans(
    tokens: Sequence[Token],
    tags: Sequence[str],
    *,
    source: str = "gold",
    scores: Sequence[float] | None = None,
) -> list[Span]:
    """Read spans back from BIO or BIOES tags.

    Ill-formed sequences are read leniently, as conlleval does: an ``I-X`` after
    ``O`` or after another label starts a new span, so a decoder that produces
    one never loses a PHI token. A span's score is the minimum of its tokens'
    scores: the weakest token is what a reviewer should look at.
    """
    if len(tokens) != len(tags):
        raise ValueError(f"{len(tokens)} tokens but {len(tags)} tags")
    spans: list[Span] = []
    cur_label: str | None = None
    cur_start = 0
    cur_end = 0
    cur_score = 1.0

    def close() -> None:
        nonlocal cur_label
        if cur_label is not None:
            spans.append(Span(cur_start, cur_end, cur_label, source, cur_score))
        cur_label = None

    for k, (tok, tag) in enumerate(zip(tokens, tags)):
        score = 1.0 if scores is None else float(scores[k])
        if tag == OUTSIDE:
            close()
            continue
        prefix, _, label = tag.partition("-")
        if prefix in ("B", "S") or label != cur_label:
            close()
            cur_label, cur_start, cur_end, cur_score = label, tok.start, tok.end, score
        else:
            cur_end = tok.end
            cur_score = min(cur_score, score)
        if prefix in ("E", "S"):
            close()
    close()
    return spans


def tag_labels(labels: Sequence[str], scheme: str = "BIO") -> list[str]:
    """All tags of a scheme over ``labels``, ``O`` first."""
    prefixes = "BI" if scheme == "BIO" else "BIES"
    return [OUTSIDE] + [f"{p}-{label}" for label in sorted(labels) for p in prefixes]


def alignment_upper_bound(tokens: Sequence[Token], spans: Sequence[Span]) -> float:
    """Share of spans whose both edges are token edges: the best a token tagger can score."""
    if not spans:
        return 1.0
    starts = {t.start for t in tokens}
    ends = {t.end for t in tokens}
    ok = sum(1 for s in spans if s.start in starts and s.end in ends)
    return ok / len(spans)
