"""merge_spans: paper 000 section 3.4 priority, deterministic ties, configurable order."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deid_core.engine.merge import MergeConfig, merge_spans
from deid_core.spans import Span, find_overlap


def S(start: int, end: int, source: str, label: str = "X", score: float = 1.0) -> Span:
    return Span(start, end, label, source, score)


CASES = [
    # (input spans, expected output)
    ("no overlap: everything kept, sorted",
     [S(10, 12, "crf:v1"), S(0, 3, "rule:a")],
     [S(0, 3, "rule:a"), S(10, 12, "crf:v1")]),
    ("rule beats a longer crf span",
     [S(0, 10, "crf:v1"), S(2, 5, "rule:phone")],
     [S(2, 5, "rule:phone")]),
    ("char crf beats token crf",
     [S(0, 4, "crf:v1"), S(2, 8, "charcrf:v1")],
     [S(2, 8, "charcrf:v1")]),
    ("rule beats char crf beats crf (paper 000 example)",
     [S(0, 5, "crf:v1"), S(1, 6, "charcrf:v1"), S(2, 7, "rule:x")],
     [S(2, 7, "rule:x")]),
    ("same detector: longer wins",
     [S(0, 4, "rule:a"), S(2, 9, "rule:b")],
     [S(2, 9, "rule:b")]),
    ("same detector, same length: earlier wins",
     [S(3, 7, "rule:a"), S(1, 5, "rule:b")],
     [S(1, 5, "rule:b")]),
    ("same span: higher score wins (fax over phone)",
     [S(0, 8, "rule:phone", "PHONE", 0.85), S(0, 8, "rule:fax", "FAX", 0.95)],
     [S(0, 8, "rule:fax", "FAX", 0.95)]),
    ("a rule span removes every crf span it overlaps",
     [S(5, 8, "rule:a"), S(0, 6, "crf:v1"), S(7, 12, "crf:v1")],
     [S(5, 8, "rule:a")]),
    ("a span overlapping only a rejected span survives",
     [S(0, 3, "rule:a"), S(2, 6, "crf:v1"), S(5, 9, "crf:v1")],
     [S(0, 3, "rule:a"), S(5, 9, "crf:v1")]),
    ("unknown sources rank last",
     [S(0, 10, "gazetteer:x"), S(3, 4, "crf:v1")],
     [S(3, 4, "crf:v1")]),
    ("touching spans do not overlap",
     [S(0, 3, "crf:v1"), S(3, 6, "rule:a")],
     [S(0, 3, "crf:v1"), S(3, 6, "rule:a")]),
    ("exact duplicates collapse",
     [S(0, 3, "crf:v1"), S(0, 3, "crf:v1")],
     [S(0, 3, "crf:v1")]),
    ("empty input", [], []),
]


@pytest.mark.parametrize(("name", "spans", "expected"), CASES, ids=[c[0] for c in CASES])
def test_default_priority(name: str, spans: list[Span], expected: list[Span]) -> None:
    assert merge_spans(spans) == expected


def test_priority_is_configurable() -> None:
    spans = [S(0, 5, "crf:v1"), S(2, 4, "rule:a"), S(1, 6, "human:ann")]
    assert merge_spans(spans) == [S(2, 4, "rule:a")]
    assert merge_spans(spans, ("human", "rule", "crf")) == [S(1, 6, "human:ann")]
    assert merge_spans(spans, MergeConfig(("crf", "rule"))) == [S(0, 5, "crf:v1")]
    # A detector missing from the list ranks after every listed one.
    assert merge_spans(spans, ["crf"]) == [S(0, 5, "crf:v1")]


def test_rank_reads_prefix_before_colon() -> None:
    config = MergeConfig()
    assert config.rank("rule:phone") == 0
    assert config.rank("charcrf:2024") == 1
    assert config.rank("crf:abc:def") == 2
    assert config.rank("rule") == 0
    assert config.rank("human:x") == 3


spans_strategy = st.lists(
    st.builds(
        lambda a, n, src, lab, sc: Span(a, a + n, lab, src, sc),
        st.integers(0, 60),
        st.integers(1, 12),
        st.sampled_from(["rule:a", "rule:b", "charcrf:1", "crf:1", "human:x", "other"]),
        st.sampled_from(["A", "B"]),
        st.sampled_from([0.2, 0.5, 0.9]),
    ),
    max_size=25,
)


@settings(max_examples=200, deadline=None)
@given(spans_strategy)
def test_output_is_sorted_non_overlapping_subset_and_order_free(spans: list[Span]) -> None:
    out = merge_spans(spans)
    assert find_overlap(out) is None
    assert out == sorted(out, key=lambda s: (s.start, s.end, s.label, s.source))
    assert set(out) <= set(spans)
    shuffled = list(spans)
    random.Random(0).shuffle(shuffled)
    assert merge_spans(shuffled) == out
    # Every input span is either kept or overlaps a kept span of equal or higher priority.
    config = MergeConfig()
    for span in spans:
        if span in out:
            continue
        blockers = [k for k in out if k.overlaps(span)]
        assert blockers
        assert any(config.rank(k.source) <= config.rank(span.source) for k in blockers)


REMAINDERS = [
    ("rule inside a long crf span: both sides survive",
     [S(0, 20, "crf:1", "HOSPITAL"), S(8, 12, "rule:d", "DATE")],
     [S(0, 8, "crf:1", "HOSPITAL"), S(8, 12, "rule:d", "DATE"), S(12, 20, "crf:1", "HOSPITAL")]),
    ("loser fully covered: nothing extra",
     [S(2, 5, "crf:1"), S(0, 8, "rule:a")],
     [S(0, 8, "rule:a")]),
    ("two losers overlapping each other keep disjoint remainders",
     [S(4, 6, "rule:a"), S(0, 10, "crf:1", "A"), S(2, 12, "crf:1", "B")],
     [S(0, 4, "crf:1", "A"), S(4, 6, "rule:a"), S(6, 10, "crf:1", "A"), S(10, 12, "crf:1", "B")]),
]


@pytest.mark.parametrize(("name", "spans", "expected"), REMAINDERS, ids=[c[0] for c in REMAINDERS])
def test_keep_remainders(name: str, spans: list[Span], expected: list[Span]) -> None:
    assert merge_spans(spans, MergeConfig(keep_remainders=True)) == expected
    # The paper's rule (the default) drops the losers entirely.
    assert set(merge_spans(spans)) <= set(expected)


def _covered(spans: list[Span]) -> set[int]:
    return {i for s in spans for i in range(s.start, s.end)}


@settings(max_examples=200, deadline=None)
@given(spans_strategy)
def test_keep_remainders_never_unmarks_a_character(spans: list[Span]) -> None:
    out = merge_spans(spans, MergeConfig(keep_remainders=True))
    assert find_overlap(out) is None
    assert _covered(out) == _covered(spans)
