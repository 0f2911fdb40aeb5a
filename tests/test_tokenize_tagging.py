"""Tokenisation keeps every character; spans <-> BIO/BIOES round-trips."""

from __future__ import annotations

import random

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from deid_core.engine.tagging import alignment_upper_bound, spans_to_tags, tags_to_spans
from deid_core.engine.tokenize import (
    _INVISIBLE,
    ClinicalTokenizer,
    Token,
    _is_blank,
    spacy_doc,
    tokenize,
)
from deid_core.errors import MisalignedSpan
from deid_core.spans import Span
from deid_core.synthetic import REALISTIC, generate_notes


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Dr.Smith", ["Dr", ".", "Smith"]),
        ("09/14/2067CPT Code", ["09", "/", "14", "/", "2067", "CPT", "Code"]),
        ("WhalenChief", ["Whalen", "Chief"]),
        ("USMeaningful", ["US", "Meaningful"]),
        ("a26 yo", ["a", "26", "yo"]),
        ("Sexo: H.", ["Sexo", ":", "H", "."]),
        ("E-mail:ana@x.es", ["E", "-", "mail", ":", "ana", "@", "x", ".", "es"]),
        ("\ufeffNombre", ["Nombre"]),
    ],
)
def test_clinical_splits(text, expected):
    assert [t.text for t in tokenize(text, "en").tokens] == expected


def test_offsets_and_lines():
    text = "Name: Ann Lee\n\nSeen 2067-01-02.  Dr. Kim saw her. She is well."
    tk = tokenize(text)
    for t in tk.tokens:
        assert text[t.start : t.end] == t.text
    assert tk.tokens[0].line == 0 and tk.tokens[0].line_start
    seen = next(t for t in tk.tokens if t.text == "Seen")
    assert seen.line == 2 and seen.line_start
    sentences = [" ".join(t.text for t in s) for s in tk.sentence_tokens()]
    assert sentences == [
        "Name : Ann Lee",
        "Seen 2067 - 01 - 02 .",
        "Dr . Kim saw her .",
        "She is well .",
    ]


def spacy_tokens(text: str, lang: str) -> list[Token]:
    """The tokens as the tokenizer once read them from spaCy's ``Doc``: the reference."""
    tokens: list[Token] = []
    line, pos, line_start = 0, 0, True
    for t in spacy_doc(text, lang):
        s, start = t.text, t.idx
        if start > pos and text.count("\n", pos, start):
            line += text.count("\n", pos, start)
            line_start = True
        if _is_blank(s):
            if "\n" in s:
                line += s.count("\n")
                line_start = True
            pos = start + len(s)
            continue
        end = start + len(s)
        while s[0] in _INVISIBLE:
            s, start = s[1:], start + 1
        tokens.append(Token(s, start, end, line, line_start))
        line_start, pos = False, end
    return tokens


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet=st.characters(codec="utf-8"), max_size=160),
    st.sampled_from(["en", "es"]),
)
@example("Seen by Dr.Smith on 09/14/2067CPT, e-mail ann@x.org; NHC 1234567.", "en")
@example("Fecha de nacimiento: 03/05/1960. Sexo: H. C/ Mayor 3, 28013 Madrid.", "es")
@example("\u200b\ufeffAnn\u2060 (Lee)... \"x\"\r\n\n 5mg/kg 'n't' U.S.A.", "en")
def test_tokenizer_splits_like_spacy(text, lang):
    # ClinicalTokenizer re-implements spaCy's splitting in Python; the model was
    # trained on spaCy's tokens, so every token, offset and line must agree.
    assert list(ClinicalTokenizer(lang).tokenize(text).tokens) == spacy_tokens(text, lang)


_TRICKY = [*"aAzZ09 .,;:!?-/\\()[]{}<>'\"`~@#$%^&*_+=|\t\n\r", *"\u00a0\u200b\ufeff\u2060\u2028\x85\u3000",
           *"éÉñÑüßΩЖж北😀’‘“”…–—°±µ§©", "Dr.", "St.", "e.g.", "U.S.", "http://x.org/a?b=1", "a@b.co",
           "5mg", "12:30", "1,000.5", "'s", "n't", "--", "...", "MRN#"]


@pytest.mark.parametrize("lang", ["en", "es"])
def test_tokenizer_splits_like_spacy_on_notes_and_punctuation_soup(lang):
    # Generated notes in three cases, and strings of the characters and pieces
    # that exercise the prefix, suffix and infix rules, with one tokenizer (its
    # chunk memory filling up as in a long run).
    rng = random.Random(7)
    texts = [t for d in generate_notes(40, seed=3, **REALISTIC) for t in (d.text, d.text.lower(), d.text.upper())]
    texts += ["".join(rng.choice(_TRICKY) for _ in range(rng.randint(0, 50))) for _ in range(1500)]
    tokenizer = ClinicalTokenizer(lang)
    for text in texts:
        assert list(tokenizer.tokenize(text).tokens) == spacy_tokens(text, lang), text


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=200))
def test_every_character_is_accounted_for(text):
    doc = spacy_doc(text, "en")
    assert "".join(t.text_with_ws for t in doc) == text
    tk = tokenize(text)
    covered = [False] * len(text)
    for t in tk.tokens:
        assert text[t.start : t.end] == t.text
        for i in range(t.start, t.end):
            assert not covered[i]
            covered[i] = True
    for i, c in enumerate(text):
        if not covered[i]:
            assert c.isspace() or c in "\ufeff\u200b\u200c\u200d\u2060"


WORDS = st.lists(
    st.tuples(st.from_regex(r"[A-Za-z0-9]{1,6}", fullmatch=True), st.sampled_from(["O", "A", "B"])),
    min_size=1,
    max_size=25,
)


@settings(max_examples=200, deadline=None)
@given(WORDS, st.sampled_from(["BIO", "BIOES"]))
def test_spans_tags_round_trip(words, scheme):
    # Build a text of space-separated words; consecutive words with one label form a span.
    text, spans, pos = "", [], 0
    run = None
    for word, label in words:
        start = pos
        text += word + " "
        pos = len(text)
        if label != "O":
            if run and run[2] == label and run[1] == start - 1:
                run = (run[0], start + len(word), label)
            else:
                if run:
                    spans.append(Span(run[0], run[1], run[2]))
                run = (start, start + len(word), label)
        elif run:
            spans.append(Span(run[0], run[1], run[2]))
            run = None
    if run:
        spans.append(Span(run[0], run[1], run[2]))
    tokens = [t for t in tokenize(text).tokens]
    # Words like "a1" split into two tokens; spans still align on token edges.
    aligned = spans_to_tags(tokens, spans, scheme)
    assert aligned.misaligned == [] and aligned.dropped == []
    assert tags_to_spans(tokens, aligned.tags) == spans


def test_misaligned_span_is_reported_not_dropped():
    text = "Patient Annabel Lee"
    tokens = tokenize(text).tokens
    span = Span(10, 19, "PATIENT")  # starts inside "Annabel"
    aligned = spans_to_tags(tokens, [span])
    assert aligned.misaligned == [span]
    assert aligned.tags == ["O", "B-PATIENT", "I-PATIENT"]  # snapped outwards
    with pytest.raises(MisalignedSpan):
        spans_to_tags(tokens, [span], snap=False)
    assert alignment_upper_bound(tokens, [span, Span(8, 15, "PATIENT")]) == 0.5


def test_bioes_and_lenient_reading():
    tokens = tokenize("a b c d").tokens
    spans = [Span(0, 1, "X"), Span(2, 5, "Y")]
    assert spans_to_tags(tokens, spans, "BIOES").tags == ["S-X", "B-Y", "E-Y", "O"]
    # An I- after O starts a span rather than being lost.
    assert tags_to_spans(tokens, ["O", "I-X", "I-X", "B-X"]) == [Span(2, 5, "X"), Span(6, 7, "X")]
    got = tags_to_spans(tokens, ["B-X", "I-X", "O", "O"], scores=[0.9, 0.6, 1, 1], source="crf:m")
    assert got == [Span(0, 3, "X", "crf:m", 0.6)]
