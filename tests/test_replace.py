from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deid_core.corpus import read_jsonl, write_jsonl
from deid_core.errors import InvalidSpan, OverlappingSpans
from deid_core.protect.replace import OffsetMap, Replacement, Segment, apply_replacements
from deid_core.spans import Document, Span


@st.composite
def text_and_replacements(draw: st.DrawFn) -> tuple[str, list[Replacement]]:
    text = draw(st.text(min_size=1, max_size=120))
    cuts = sorted(draw(st.sets(st.integers(0, len(text)), max_size=12)))
    reps = []
    # Consecutive cut pairs give non-overlapping spans; keep a random subset.
    for a, b in zip(cuts[::2], cuts[1::2]):
        if a < b and draw(st.booleans()):
            label = draw(st.sampled_from(["NAME", "DATE", "ID"]))
            new = draw(st.text(min_size=1, max_size=12))
            reps.append(Replacement(Span(a, b, label, "rule:x", 0.5), new))
    return text, draw(st.permutations(reps))


@settings(max_examples=150, deadline=None)
@given(text_and_replacements())
def test_replacement_offsets_are_right(case: tuple[str, list[Replacement]]) -> None:
    text, reps = case
    result = apply_replacements(text, reps)
    ordered = sorted(reps, key=lambda r: r.span.start)
    assert [s.label for s in result.spans] == [r.span.label for r in ordered]
    for rep, new_span in zip(ordered, result.spans):
        assert result.text[new_span.start : new_span.end] == rep.text
        assert new_span.source == rep.span.source and new_span.score == rep.span.score
    # Text between replacements is untouched.
    m = result.offset_map
    bounds = [0] + [x for r in ordered for x in (r.span.start, r.span.end)] + [len(text)]
    for a, b in zip(bounds[::2], bounds[1::2]):
        assert result.text[m.map(a) : m.map(b)] == text[a:b]
    assert len(result.text) == m.dst_length


@settings(max_examples=150, deadline=None)
@given(text_and_replacements())
def test_offset_map_inverts(case: tuple[str, list[Replacement]]) -> None:
    text, reps = case
    result = apply_replacements(text, reps)
    fwd = result.offset_map
    back = fwd.inverse()
    assert back.inverse() == fwd
    assert OffsetMap.from_dict(fwd.to_dict()) == fwd
    for rep, new_span in zip(sorted(reps, key=lambda r: r.span.start), result.spans):
        assert back.map_span(new_span).key == rep.span.key
        assert fwd.map_span(rep.span).key == new_span.key
    interior = {x for r in reps for x in range(r.span.start + 1, r.span.end)}
    for x in range(len(text) + 1):
        if x not in interior:
            assert back.map(fwd.map(x)) == x


@settings(max_examples=60, deadline=None)
@given(text_and_replacements())
def test_reimport_gives_same_spans(tmp_path_factory: pytest.TempPathFactory, case) -> None:
    text, reps = case
    result = apply_replacements(text, reps)
    path = tmp_path_factory.mktemp("reimport") / "out.jsonl"
    write_jsonl(path, [Document("d1", result.text, result.spans)])
    (back,) = read_jsonl(path)
    assert back.text == result.text
    assert [(s.key, s.source) for s in back.spans] == [(s.key, s.source) for s in result.spans]


@pytest.mark.parametrize(
    ("reps", "error"),
    [
        ([Replacement(Span(3, 12, "NAME"), "X")], InvalidSpan),
        ([Replacement(Span(0, 4, "NAME"), "X"), Replacement(Span(2, 6, "DATE"), "Y")], OverlappingSpans),
        ([Replacement(Span(0, 4, "NAME"), "")], InvalidSpan),
    ],
)
def test_bad_replacements_raise_typed_errors(reps: list[Replacement], error: type) -> None:
    with pytest.raises(error) as info:
        apply_replacements("Smith 2067", reps, doc_id="d7")
    assert "Smith" not in str(info.value)
    assert "d7" in str(info.value)


@pytest.mark.parametrize(
    ("text", "reps", "expected"),
    [
        ("Mr Smith seen", [(3, 8, "[**PATIENT**]")], "Mr [**PATIENT**] seen"),
        ("a b", [(0, 1, "xyz"), (2, 3, "q")], "xyz q"),
        ("abc", [], "abc"),
    ],
)
def test_replacement_table(text: str, reps: list[tuple[int, int, str]], expected: str) -> None:
    result = apply_replacements(text, [Replacement(Span(a, b, "L"), t) for a, b, t in reps])
    assert result.text == expected


@pytest.mark.parametrize(
    ("offset", "side", "expected"),
    [(0, "start", 0), (3, "start", 3), (5, "start", 3), (5, "end", 16), (8, "end", 16), (9, "start", 17)],
)
def test_offset_inside_replacement_snaps_to_its_side(offset: int, side, expected: int) -> None:
    m = apply_replacements("Mr Smith seen", [Replacement(Span(3, 8, "P"), "[**PATIENT**]")]).offset_map
    assert m.map(offset, side) == expected


@pytest.mark.parametrize("raw", [{"segments": [[0, 1]]}, {}, {"segments": [[5, 2, 0, 1]], "src_length": 9, "dst_length": 9}])
def test_malformed_offset_map_is_refused(raw: dict) -> None:
    with pytest.raises(InvalidSpan):
        OffsetMap.from_dict(raw)


def test_offset_out_of_range_raises() -> None:
    m = OffsetMap((Segment(0, 2, 0, 5),), 4, 7)
    with pytest.raises(InvalidSpan):
        m.map(5)
