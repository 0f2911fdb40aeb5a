"""The review editing model: snapping, add/delete/relabel/extend, undo, apply-to-all."""

from __future__ import annotations

import pytest

from deid_core.engine.tokenize import tokenize
from deid_core.spans import Span
from deid_core.ui.editing import (
    EditRejected,
    EditState,
    Target,
    add_span,
    apply_action,
    apply_changes,
    delete_span,
    diff_layers,
    extend_span,
    find_identical,
    plan_apply_all,
    relabel_span,
    shrink_span,
    snap_to_tokens,
    undo,
)

TEXT = "Seen by Dr. Ann Lee on 09/14/2067 at Annual clinic. Ann Lee called."
TOKENS = tokenize(TEXT).tokens


def at(word: str, nth: int = 0) -> tuple[int, int]:
    pos = -1
    for _ in range(nth + 1):
        pos = TEXT.index(word, pos + 1)
    return pos, pos + len(word)


@pytest.mark.parametrize(
    "start, end, expected",
    [
        (*at("Ann"), at("Ann")),  # exact token
        (at("Ann")[0] + 1, at("Ann")[0] + 2, at("Ann")),  # inside a token -> whole token
        (at("Ann")[0] + 1, at("Lee")[0] + 1, (at("Ann")[0], at("Lee")[1])),  # two partial tokens
        (at("Ann")[1], at("Lee")[0], None),  # only the space between
        (at("09/14/2067")[0], at("09/14/2067")[0] + 4, (at("09/14/2067")[0], at("09/14/2067")[0] + 5)),
        (5, 5, None),
    ],
)
def test_snap_to_tokens(start, end, expected):
    assert snap_to_tokens(TOKENS, start, end) == expected


def test_add_replaces_overlaps_and_undo_restores():
    old = Span(*at("Ann"), "DOCTOR", "crf:v1", 0.6)
    state = EditState.start([old])
    s2 = add_span(state, TOKENS, at("Ann")[0] + 1, at("Lee")[1] - 1, "PATIENT", "rita")
    assert [(s.start, s.end, s.label, s.source) for s in s2.spans] == [
        (at("Ann")[0], at("Lee")[1], "PATIENT", "human:rita")
    ]
    assert s2.dirty and s2.can_undo
    back = undo(s2)
    assert back.spans == (old,) and not back.dirty and not back.can_undo
    assert undo(back) == back


@pytest.mark.parametrize(
    "op",
    [
        lambda s: add_span(s, TOKENS, at("Lee")[1], at("Lee")[1] + 1, "DATE", "u"),  # a space
        lambda s: delete_span(s, 0, 4),
        lambda s: relabel_span(s, 0, 4, "DATE", "u"),
        lambda s: extend_span(s, TOKENS, 0, 4, "next", "u"),
    ],
)
def test_rejected_edits(op):
    state = EditState.start([Span(*at("Ann"), "DOCTOR")])
    with pytest.raises(EditRejected):
        op(state)


def test_delete_and_relabel():
    span = Span(*at("Ann"), "DOCTOR", "crf:v1", 0.7)
    state = EditState.start([span])
    assert delete_span(state, span.start, span.end).spans == ()
    relabelled = relabel_span(state, span.start, span.end, "PATIENT", "rita")
    assert relabelled.spans == (Span(span.start, span.end, "PATIENT", "human:rita", 1.0),)
    assert relabel_span(state, span.start, span.end, "DOCTOR", "rita") is state


@pytest.mark.parametrize(
    "direction, expected",
    [
        ("next", (at("Ann")[0], at("Lee")[1])),
        ("prev", (at("Dr")[1], at("Ann")[1])),  # the "." token before Ann
    ],
)
def test_extend(direction, expected):
    state = EditState.start([Span(*at("Ann"), "DOCTOR")])
    out = extend_span(state, TOKENS, *at("Ann"), direction, "u")
    assert [(s.start, s.end, s.label) for s in out.spans] == [(*expected, "DOCTOR")]


def test_extend_absorbs_neighbour_and_shrink():
    state = EditState.start([Span(*at("Ann"), "DOCTOR"), Span(*at("Lee"), "PATIENT")])
    out = extend_span(state, TOKENS, *at("Ann"), "next", "u")
    assert [(s.start, s.end) for s in out.spans] == [(at("Ann")[0], at("Lee")[1])]
    shrunk = shrink_span(out, TOKENS, at("Ann")[0], at("Lee")[1], "end", "u")
    assert [(s.start, s.end) for s in shrunk.spans] == [at("Ann")]
    with pytest.raises(EditRejected):
        shrink_span(shrunk, TOKENS, *at("Ann"), "start", "u")


def test_find_identical_respects_token_boundaries():
    assert find_identical(TEXT, TOKENS, "Ann") == [at("Ann"), at("Ann", 2)]
    assert find_identical(TEXT, TOKENS, "Ann Lee") == [
        (at("Ann")[0], at("Lee")[1]), (at("Ann", 2)[0], at("Lee", 1)[1])
    ]
    assert find_identical(TEXT, TOKENS, "  ") == []


def test_plan_and_apply_across_documents():
    other_text = "Ann Lee phoned. Mrs. Ann Lee again."
    other = Target("d2", other_text, tokenize(other_text).tokens, [Span(0, 7, "PATIENT")])
    this = Target("d1", TEXT, TOKENS, [Span(*at("Ann"), "DOCTOR")])
    plan = plan_apply_all([this, other], "Ann Lee", "PATIENT", "add")
    assert [(c.doc_id, c.start, c.end, c.kind) for c in plan] == [
        ("d1", at("Ann")[0], at("Lee")[1], "add"),
        ("d1", at("Ann", 2)[0], at("Lee", 1)[1], "add"),
        ("d2", 21, 28, "add"),
    ]
    assert plan[0].replaces == (Span(*at("Ann"), "DOCTOR"),)
    state = apply_changes(EditState.start(this.spans), [c for c in plan if c.doc_id == "d1"], "rita")
    assert [(s.start, s.end, s.label) for s in state.spans] == [
        (at("Ann")[0], at("Lee")[1], "PATIENT"), (at("Ann", 2)[0], at("Lee", 1)[1], "PATIENT")
    ]
    assert undo(state).spans == (Span(*at("Ann"), "DOCTOR"),)  # one undo step
    removal = plan_apply_all([Target("d1", TEXT, TOKENS, state.spans)], "Ann Lee", "PATIENT", "remove")
    assert len(removal) == 2
    assert apply_changes(state, removal, "rita").spans == ()


def test_diff_layers():
    a, b, c = Span(0, 4, "X"), Span(5, 7, "Y"), Span(8, 9, "Z")
    assert diff_layers([a, b], [b, c]) == {"added": [c], "removed": [a]}


@pytest.mark.parametrize(
    "action, expected",
    [
        ({"type": "add", "start": at("Lee")[0], "end": at("Lee")[1], "label": "PATIENT"},
         [(*at("Ann"), "DOCTOR"), (*at("Lee"), "PATIENT")]),
        ({"type": "relabel", "start": at("Ann")[0], "end": at("Ann")[1], "label": "PATIENT"},
         [(*at("Ann"), "PATIENT")]),
        ({"type": "delete", "start": at("Ann")[0], "end": at("Ann")[1]}, []),
        ({"type": "extend", "start": at("Ann")[0], "end": at("Ann")[1], "direction": "next"},
         [(at("Ann")[0], at("Lee")[1], "DOCTOR")]),
        ({"type": "undo"}, [(*at("Ann"), "DOCTOR")]),
    ],
)
def test_apply_action(action, expected):
    state = EditState.start([Span(*at("Ann"), "DOCTOR")])
    out = apply_action(state, action, TOKENS, "rita", ["DOCTOR", "PATIENT"])
    assert [(s.start, s.end, s.label) for s in out.spans] == expected


@pytest.mark.parametrize(
    "action",
    [
        {"type": "explode"},
        {"type": "add", "start": "0", "end": 3, "label": "PATIENT"},
        {"type": "add", "start": 0, "end": 3, "label": "<img src=x>"},
        {"type": "delete", "start": -1, "end": 3},
        {"type": "accept"},
    ],
)
def test_apply_action_rejects_bad_payloads(action):
    with pytest.raises(EditRejected):
        apply_action(EditState.start([]), action, TOKENS, "rita", ["PATIENT"])


# --- a layer edited in the browser -----------------------------------------------------


def _browser(spans):
    return [{"s": s.start, "e": s.end, "l": s.label, "src": s.source, "sc": s.score} for s in spans]


def test_layer_from_browser_keeps_server_provenance_and_marks_changes_human():
    from deid_core.ui.editing import layer_from_browser

    ann = TEXT.index("Ann Lee")
    model = Span(ann, ann + 7, "PATIENT", "crf:v1", 0.61)
    state = EditState.start([model])
    sent = _browser([model]) + [{"s": 0, "e": 4, "l": "DOCTOR", "src": "crf:forged", "sc": 0.99}]
    out = layer_from_browser(state, sent, TOKENS, len(TEXT), "rita", ["PATIENT", "DOCTOR"])
    assert out.spans == (Span(0, 4, "DOCTOR", "human:rita", 1.0), model)
    assert out.undo_stack == (state.spans,)
    # "Enter" on an uncertain span: the browser marks it the reviewer's
    confirmed = [dict(_browser([model])[0], src="human:rita", sc=1.0)]
    assert layer_from_browser(state, confirmed, TOKENS, len(TEXT), "rita", ["PATIENT"]).spans == (
        Span(ann, ann + 7, "PATIENT", "human:rita", 1.0),)


@pytest.mark.parametrize(
    "sent, message",
    [
        ("nope", "no span list"),
        ([{"s": 0, "e": 999, "l": "PATIENT"}], "outside the note"),
        ([{"s": 1, "e": 4, "l": "PATIENT"}], "on tokens"),
        ([{"s": 0, "e": 4, "l": "<script>"}], "label outside"),
        ([{"s": 0, "e": 4, "l": "PATIENT"}, {"s": 0, "e": 7, "l": "DOCTOR"}], "overlap"),
        ([{"s": "0", "e": 4, "l": "PATIENT"}], "offsets"),
    ],
)
def test_layer_from_browser_rejects_bad_layers(sent, message):
    from deid_core.ui.editing import layer_from_browser

    with pytest.raises(EditRejected, match=message):
        layer_from_browser(EditState.start([]), sent, TOKENS, len(TEXT), "rita", ["PATIENT", "DOCTOR"])


def test_layer_from_browser_keeps_an_imported_label_the_scheme_lacks_but_refuses_new_ones():
    from deid_core.ui.editing import layer_from_browser

    imported = Span(0, 4, "<img onerror=x>", "import", 1.0)
    state = EditState.start([imported])
    out = layer_from_browser(state, _browser([imported]), TOKENS, len(TEXT), "rita", ["PATIENT"])
    assert out.spans == (imported,)
    moved = [dict(_browser([imported])[0], e=7)]
    with pytest.raises(EditRejected, match="label outside"):
        layer_from_browser(state, moved, TOKENS, len(TEXT), "rita", ["PATIENT"])
