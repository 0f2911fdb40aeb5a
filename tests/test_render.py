"""Highlighted-note HTML: escaping of text AND labels, colours, hover, uncertain, near misses."""

from __future__ import annotations

import re

import pytest

from deid_core.schemes import load_scheme
from deid_core.spans import Span
from deid_core.ui.render import (
    FALLBACK_COLOUR,
    render_legend_html,
    render_note_html,
    safe_colour,
    segment_note,
    text_colour,
)

SCHEME = load_scheme("i2b2_2014")
XSS_TEXT = 'Pt <script>alert(1)</script> seen <img src=x onerror=alert(2)> "q" & \'a\''
XSS_LABEL = '<img src=x onerror=alert(3)>"'


@pytest.mark.parametrize(
    "spans, near, expected",
    [
        ([], [], [(0, 10, "text")]),
        ([Span(2, 4, "A")], [], [(0, 2, "text"), (2, 4, "span"), (4, 10, "text")]),
        ([Span(0, 10, "A")], [], [(0, 10, "span")]),
        ([Span(2, 4, "A")], [Span(6, 8, "B", score=0.3)],
         [(0, 2, "text"), (2, 4, "span"), (4, 6, "text"), (6, 8, "near"), (8, 10, "text")]),
        ([Span(2, 4, "A")], [Span(3, 5, "B", score=0.3)],  # near miss touching a span: dropped
         [(0, 2, "text"), (2, 4, "span"), (4, 10, "text")]),
        ([Span(2, 6, "A"), Span(4, 8, "B")], [],  # overlap clipped: each char in one segment
         [(0, 2, "text"), (2, 6, "span"), (6, 8, "span"), (8, 10, "text")]),
    ],
)
def test_segments_cover_every_character_once(spans, near, expected):
    segs = segment_note(10, spans, near)
    assert [(s.start, s.end, s.kind) for s in segs] == expected


@pytest.mark.parametrize(
    "score, uncertain", [(0.99, False), (0.8, False), (0.79, True), (0.1, True)]
)
def test_uncertain_below_threshold(score, uncertain):
    (seg,) = [s for s in segment_note(5, [Span(0, 3, "A", "crf:v", score)]) if s.kind == "span"]
    assert seg.uncertain is uncertain
    html_out = render_note_html("abcde", [Span(0, 3, "A", "crf:v", score)])
    assert ("deid-uncertain" in html_out) is uncertain


def test_text_and_label_are_escaped():
    start = XSS_TEXT.index("<script>")
    spans = [Span(start, start + 8, XSS_LABEL, 'crf:<b>"v1"', 0.5)]
    near = [Span(XSS_TEXT.index("<img"), XSS_TEXT.index("<img") + 4, XSS_LABEL, score=0.4)]
    out = render_note_html(XSS_TEXT, spans, near_misses=near, scheme=SCHEME)
    assert "<script" not in out and "<img" not in out and "<b>" not in out
    assert "&lt;script&gt;" in out and "&lt;img src=x onerror=alert(3)&gt;&quot;" in out
    # every attribute value is quoted and contains no raw quote or angle bracket
    for value in re.findall(r'="([^"]*)"', out):
        assert "<" not in value and ">" not in value
    legend = render_legend_html([XSS_LABEL], SCHEME)
    assert "<img" not in legend and "&lt;img" in legend


def test_hover_title_has_label_score_source():
    out = render_note_html("Ann came", [Span(0, 3, "PATIENT", "crf:v7", 0.91)], scheme=SCHEME)
    assert 'title="PATIENT 0.91 [crf:v7]"' in out
    assert "background:#e6194b" in out  # the scheme's colour for PATIENT


def test_near_miss_dotted_underline():
    out = render_note_html("Ann came", [], near_misses=[Span(4, 8, "CITY", "crf:v", 0.35)])
    assert 'class="deid-near"' in out and "dotted" in out and "possible CITY: p=0.35" in out


@pytest.mark.parametrize(
    "colour, expected",
    [("#a0b1c2", "#a0b1c2"), ("red;background:url(x)", FALLBACK_COLOUR), (None, FALLBACK_COLOUR),
     ("#fff", FALLBACK_COLOUR)],
)
def test_safe_colour(colour, expected):
    assert safe_colour(colour) == expected


@pytest.mark.parametrize("bg, fg", [("#ffffff", "#000000"), ("#000000", "#ffffff"),
                                    ("#ffb347", "#000000"), ("#800000", "#ffffff")])
def test_text_colour_contrast(bg, fg):
    assert text_colour(bg) == fg


def test_unknown_label_gets_fallback_colour_and_numbered_legend():
    out = render_note_html("abc", [Span(0, 3, "NOPE")], scheme=SCHEME)
    assert f"background:{FALLBACK_COLOUR}" in out
    legend = render_legend_html(["PATIENT", "DATE"], SCHEME, numbered=True)
    assert "<kbd>1</kbd>" in legend and "<kbd>2</kbd>" in legend


def test_editor_payload_sanitises_colours_and_keeps_text_as_data():
    from deid_core.ui.component import editor_payload

    text = "Ann <b>x</b>"
    payload = editor_payload(doc_id="d", rev=3, text=text, spans=[Span(0, 3, "<i>L</i>")],
                             labels=["PATIENT", "<i>L</i>"],
                             colours={"PATIENT": "red;x:url(y)", "<i>L</i>": "#123456"})
    assert [lab["c"] for lab in payload["labels"]] == [FALLBACK_COLOUR, "#123456"]
    assert payload["spans"][0]["l"] == "<i>L</i>"  # set with textContent by the browser
    assert payload["text"] == text and payload["rev"] == "3"
    assert payload["origin"] == payload["spans"]  # opened on this layer


@pytest.mark.parametrize(
    "labels, scheme, preferred, expected",
    [
        (["PATIENT", "DOCTOR", "DATE", "ZIP"], "i2b2_2014", None, ["DATE", "DOCTOR", "PATIENT", "ZIP"]),
        (["A", "B", "C"], "other", None, ["A", "B", "C"]),
        (["A", "B", "C"], "other", ["C", "X", "C"], ["C", "A", "B"]),
    ],
)
def test_shortcut_order(labels, scheme, preferred, expected):
    from deid_core.ui.render import shortcut_order

    assert shortcut_order(labels, scheme, preferred) == expected
