"""The character-level CRF (paper 000 section 3.2.3): features, windows, merge policies, model directory."""

from __future__ import annotations

import dataclasses
import json
import random

import numpy as np
import pytest

from deid_core.engine.charcrf import (
    CharCRFConfig,
    TokenView,
    char_columns,
    char_items,
    char_tags,
    line_windows,
    note_chars,
    resolve,
    stack_windows,
    token_windows,
    train_char_crf,
)
from deid_core.engine.features import FeatureConfig
from deid_core.engine.model import (
    CHARCRF_FILE,
    MANIFEST,
    DeidModel,
    TrainConfig,
    out_of_fold_views,
    train_model,
)
from deid_core.engine.tokenize import tokenize
from deid_core.errors import ModelError
from deid_core.spans import Document, Span

FIRST = ["ANNA", "BORIS", "CARLA", "DIEGO", "ELENA", "FABIO", "GRETA", "HUGO", "IRENE", "JONAS",
         "KARIN", "LUCAS", "MARTA", "NILS", "OLGA", "PABLO"]
LAST = ["BERG", "CRUZ", "DAHL", "EGAN", "FOSS", "GIL", "HOLM", "IBARRA", "JUNG", "KROG", "LUND", "MORA"]
FILLER = ["Vitals stable.", "Plan: continue treatment.", "No acute distress.", "Follow up in two weeks."]


def _id(rng: random.Random) -> str:
    letters = "".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ") for _ in range(2))
    digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(2, 4)))
    tail = "".join(rng.choice("abcdefghjkmnpqrstuvwxyz") for _ in range(2))
    return letters + digits + tail


def glued_notes(n: int, seed: int) -> list[Document]:
    """Names glued to an upper-case role word ("NURSEANNA BERG") and ids glued after "ref_"."""
    rng = random.Random(seed)
    docs = []
    for i in range(n):
        text = ""
        spans: list[Span] = []
        lines = [(rng.choice(FILLER) + "\n", None)]
        role = rng.choice(["NURSE", "DR", "TECH"])
        name = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
        lines.append((f"Seen by {role}{name} today.\n", (len("Seen by ") + len(role), name, "NAME")))
        ident = _id(rng)
        lines.append((f"Sample ref_{ident} sent to lab.\n", (len("Sample ref_"), ident, "ID")))
        lines.append((rng.choice(FILLER) + "\n", None))
        for line, phi in lines:
            if phi is not None:
                at, value, label = phi
                spans.append(Span(len(text) + at, len(text) + at + len(value), label, "gold"))
            text += line
        docs.append(Document(f"toy{seed}-{i}", text, tuple(spans)))
    return docs


CHAR = CharCRFConfig(max_iterations=60, negative_share=1.0)
# No rule layer: the toys compare the two CRFs (the English contact-name rules would
# otherwise find some glued names first, and win the merge).
CONFIG = TrainConfig(max_iterations=30, charcrf=CHAR, builtin_gazetteer=False,
                     features=FeatureConfig(rules=False))


@pytest.fixture(scope="module")
def model() -> DeidModel:
    return train_model(glued_notes(40, seed=1), lang="en", config=CONFIG)


def test_char_crf_tags_glued_name_and_odd_id_the_token_crf_misses(model: DeidModel) -> None:
    test = glued_notes(8, seed=2)
    token_only = DeidModel.__new__(DeidModel)
    token_only.__dict__.update(model.__dict__)
    token_only.char = None
    found_name = found_id = 0
    for doc in test:
        pred = model.predict(doc)
        got = {(s.start, s.end, s.label): s for s in pred.spans}
        base = {(s.start, s.end, s.label) for s in token_only.predict(doc).spans}
        for g in doc.spans:
            key = (g.start, g.end, g.label)
            assert key not in base  # the token CRF cannot cut inside "NURSEANNA" or "ref_AB"
            if key in got:
                assert got[key].source == f"charcrf:{model.version}"
                assert 0.0 < got[key].score <= 1.0
                found_name += g.label == "NAME"
                found_id += g.label == "ID"
    assert found_name >= 6 and found_id >= 6


def test_save_load_round_trip_keeps_the_char_model(model: DeidModel, tmp_path) -> None:
    path = model.save(tmp_path / "m")
    manifest = json.loads((path / MANIFEST).read_text())
    assert CHARCRF_FILE in manifest["files"]
    again = DeidModel.load(path)
    assert again.char is not None and again.char.config == CHAR
    assert again.config.charcrf == CHAR
    for doc in glued_notes(4, seed=3):
        assert again.predict(doc).spans == model.predict(doc).spans
    (path / CHARCRF_FILE).write_bytes(b"damaged")
    with pytest.raises(ModelError, match="checksum"):
        DeidModel.load(path)


def test_training_is_deterministic(model: DeidModel) -> None:
    again = train_model(glued_notes(40, seed=1), lang="en", config=CONFIG)
    assert again.char is not None and model.char is not None
    assert again.char.crf_bytes == model.char.crf_bytes


def test_bias_moves_the_char_model_towards_recall(model: DeidModel) -> None:
    doc = glued_notes(1, seed=4)[0]
    enc = model.encode(doc)
    assert model.char is not None and enc.chars.windows
    o = model.char.o_index
    counts = [int((model.char.path(enc.chars, b) == o).sum()) for b in (-6.0, -2.0, 0.0, 2.0, 6.0)]
    assert counts == sorted(counts)  # fewer O characters at a more negative bias
    assert counts[0] < counts[-1]


def test_columns_align_and_read_past_the_window() -> None:
    text = "Seen by NURSEANNA BERG.\nref_AB12cd"
    tok = tokenize(text, "en")
    nc = note_chars(text, tok.tokens, [Span(8, 22, "NAME", "rule:x")], pad=5)
    cols = char_columns(nc, 8, 17, window=3)
    assert all(len(c) == 9 for c in cols)
    items = char_items(cols)
    assert "u-1=·" in items[0] and "u-2=y" in items[0]  # the space and "y" before the window
    assert "tp=B" in items[0] and "tw=nurseanna" in items[0] and "ts=A" in items[0]
    assert "r=B-NAME" in items[0] and "r=I-NAME" in items[1]
    assert "k=A" in items[0] and "kk=_AA" in items[0]


def test_windows_stay_in_their_line_and_merge() -> None:
    text = "a b c d e f g\nh i j"
    toks = tokenize(text, "en").tokens
    assert token_windows(toks, [3], 1) == [(4, 9)]  # c d e
    assert token_windows(toks, [1, 3], 1) == [(0, 9)]  # overlapping windows merge
    assert token_windows(toks, [6], 2) == [(8, 13)]  # e f g: not into the next line
    assert line_windows(toks) == [(0, 13), (14, 19)]
    assert char_tags(len(text), [(0, 5)], [Span(2, 5, "X", "gold")]) == ["O", "O", "B-X", "I-X", "I-X"]


C = "charcrf:v"
T = "crf:v"


@pytest.mark.parametrize(
    ("policy", "char", "crf", "kept_char", "kept_crf"),
    [
        ("priority", [Span(0, 4, "A", C, 0.5)], [Span(0, 6, "A", T, 0.9)], 1, 1),
        ("add", [Span(0, 4, "A", C, 0.5), Span(10, 12, "A", C, 0.5)], [Span(0, 6, "A", T, 0.9)], 1, 1),
        ("score", [Span(0, 4, "A", C, 0.95)], [Span(0, 6, "A", T, 0.9)], 1, 0),
        ("score", [Span(0, 4, "A", C, 0.5)], [Span(0, 6, "A", T, 0.9)], 0, 1),
        # "subtoken": only spans with an edge inside a token ("ab|cd ef" has tokens 0-4, 5-7)
        ("subtoken", [Span(2, 4, "A", C), Span(0, 4, "A", C)], [Span(0, 4, "A", T)], 1, 1),
    ],
)
def test_policies(policy, char, crf, kept_char, kept_crf) -> None:
    toks = tokenize("abcd ef", "en").tokens
    got_char, got_crf = resolve(char, crf, policy, toks)
    assert (len(got_char), len(got_crf)) == (kept_char, kept_crf)


def test_config_round_trip_and_bad_values() -> None:
    cfg = dataclasses.replace(CHAR, mode="all", policy="score")
    assert CharCRFConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg
    assert TrainConfig.from_dict(TrainConfig(charcrf=cfg).to_dict()).charcrf == cfg
    assert TrainConfig.from_dict({}).charcrf is None  # models saved before the char CRF
    with pytest.raises(ModelError, match="mode"):
        CharCRFConfig(mode="tokens")
    with pytest.raises(ModelError, match="policy"):
        CharCRFConfig(policy="vote")


def test_marginal_scores_are_probabilities(model: DeidModel) -> None:
    enc = model.encode(glued_notes(1, seed=5)[0])
    assert np.allclose(enc.chars.marginals.sum(axis=1), 1.0)


def test_provenance_reaches_the_spans_csv_and_the_review_view(model: DeidModel) -> None:
    from deid_core.formats.spans_csv import span_rows
    from deid_core.ui.render import render_note_html

    doc = glued_notes(1, seed=6)[0]
    tagged = model.predict(doc).to_document(doc)
    char_spans = [s for s in tagged.spans if s.source.startswith("charcrf:")]
    assert char_spans
    rows = [r for r in span_rows(tagged) if r["source"].startswith("charcrf:")]
    assert rows and all(r["model_version"] == model.version for r in rows)
    html = render_note_html(doc.text, tagged.spans)
    assert f"[charcrf:{model.version}]" in html


# -- stacking: the token CRF's out-of-fold labels as character features, and the "fill" merge ---------


@pytest.mark.parametrize(
    ("char", "crf", "expected"),
    [
        # a gap: added
        ([Span(10, 12, "A", C, 0.9)], [Span(0, 6, "A", T, 0.9)], {(0, 6, T), (10, 12, C)}),
        # the same label over one token span with other edges: a boundary fix
        ([Span(2, 6, "A", C, 0.9)], [Span(0, 6, "A", T, 0.9)], {(2, 6, C)}),
        # another label: the token CRF keeps its span
        ([Span(2, 6, "B", C, 0.99)], [Span(0, 6, "A", T, 0.5)], {(0, 6, T)}),
        # over two token spans: dropped
        ([Span(0, 12, "A", C, 0.99)], [Span(0, 6, "A", T), Span(8, 12, "A", T)], {(0, 6, T), (8, 12, T)}),
        # the same edges: the token CRF's span (and provenance) stays
        ([Span(0, 6, "A", C, 0.99)], [Span(0, 6, "A", T, 0.5)], {(0, 6, T)}),
        # two char spans split one token span
        ([Span(0, 3, "A", C), Span(4, 6, "A", C)], [Span(0, 6, "A", T)], {(0, 3, C), (4, 6, C)}),
        # below min_score (0.5 here): ignored, even in a gap
        ([Span(10, 12, "A", C, 0.4), Span(2, 6, "A", C, 0.4)], [Span(0, 6, "A", T)], {(0, 6, T)}),
    ],
)
def test_fill_policy_only_fills_gaps_and_fixes_edges(char, crf, expected) -> None:
    got_char, got_crf = resolve(char, crf, "fill", min_score=0.5)
    assert {(s.start, s.end, s.source) for s in [*got_char, *got_crf]} == expected


def test_stack_columns_read_the_token_crfs_labels() -> None:
    text = "Seen by ANNA BERG today"
    tok = tokenize(text, "en")
    assert [t.text for t in tok.tokens] == ["Seen", "by", "ANNA", "BERG", "today"]
    view = TokenView(("O", "O", "B-NAME", "I-NAME", "O"), (1.0, 0.95, 0.8, 0.6, 0.999), (2, 3))
    nc = note_chars(text, tok.tokens, [], pad=5, view=view)
    items = char_items(char_columns(nc, 5, 18, window=3))  # "by ANNA BERG " (chars 5..17)
    at = {i + 5: set(row) for i, row in enumerate(items)}
    assert {"sl=B-NAME", "sc=l", "sp=O", "sn=I-NAME", "sx=B-NAME|tp=B"} <= at[8]  # "A" of ANNA
    assert "sl=ws-in" in at[12]  # the space inside the token CRF's span
    assert "sl=ws" in at[7]  # the space before it
    assert {"sl=I-NAME", "sc=v", "sx=I-NAME|tp=E"} <= at[16]  # last "G" of BERG
    assert {"sl=O", "sc=m"} <= at[5]
    plain = char_items(char_columns(note_chars(text, tok.tokens, [], pad=5), 5, 18, window=3))
    assert not any(v.startswith(("sl=", "sc=", "sx=")) for row in plain for v in row)


def test_stacking_needs_views_and_two_folds() -> None:
    with pytest.raises(ModelError, match="stack_folds"):
        CharCRFConfig(stack=True, stack_folds=1)
    text = "Seen by ANNA BERG"
    tok = tokenize(text, "en")
    with pytest.raises(ModelError, match="out-of-fold"):
        train_char_crf([(text, tok.tokens, [], [])], CharCRFConfig(stack=True), "unused.crfsuite")


STACKED = dataclasses.replace(CHAR, stack=True, stack_folds=2, policy="fill")


@pytest.fixture(scope="module")
def stacked() -> DeidModel:
    return train_model(glued_notes(40, seed=1), lang="en", config=dataclasses.replace(CONFIG, charcrf=STACKED))


def test_out_of_fold_views_cover_every_note_from_a_model_without_it() -> None:
    docs = glued_notes(12, seed=7)
    config = dataclasses.replace(CONFIG, charcrf=STACKED)
    views = out_of_fold_views(docs, lang="en", scheme=None, config=config)
    assert len(views) == len(docs)
    for doc, view in zip(docs, views):
        assert len(view.tags) == len(tokenize(doc.text, "en").tokens) == len(view.conf)
        assert view.triggers  # the glued names and ids are words no fold model saw


def test_stacked_char_crf_fixes_the_token_crfs_glued_spans(stacked: DeidModel) -> None:
    """The token CRF can only mark "NURSEANNA BERG" whole; the stacked char CRF moves the edge."""
    assert stacked.char is not None and stacked.char.config.stack
    found = total = 0
    for doc in glued_notes(8, seed=2):
        got = {(s.start, s.end, s.label): s.source for s in stacked.predict(doc).spans}
        for g in doc.spans:
            total += 1
            found += got.get((g.start, g.end, g.label)) == f"charcrf:{stacked.version}"
    assert found >= 0.75 * total


def test_stacked_training_is_deterministic_and_saves(stacked: DeidModel, tmp_path) -> None:
    again = train_model(glued_notes(40, seed=1), lang="en", config=dataclasses.replace(CONFIG, charcrf=STACKED))
    assert again.char is not None and stacked.char is not None
    assert again.char.crf_bytes == stacked.char.crf_bytes
    loaded = DeidModel.load(stacked.save(tmp_path / "m"))
    assert loaded.char is not None and loaded.char.config == STACKED
    doc = glued_notes(1, seed=3)[0]
    assert loaded.predict(doc).spans == stacked.predict(doc).spans


def test_stack_windows_never_cut_a_token_crf_span() -> None:
    text = "a b c d e f g h i j"
    toks = tokenize(text, "en").tokens
    # the token CRF marks "b c d e f g" (tokens 1..6); token 8 ("i") is uncertain
    tags = ("O", "B-X", "I-X", "I-X", "I-X", "I-X", "I-X", "O", "O", "O")
    view = TokenView(tags, (1.0,) * 10, (8,))
    assert token_windows(toks, [8], 1) == [(14, 19)]  # h i j
    assert stack_windows(toks, view, 1) == [(14, 19)]  # no span cut: unchanged
    assert token_windows(toks, [8], 3) == [(10, 19)]  # f g h i j: cuts the span at "f"
    assert stack_windows(toks, view, 3) == [(2, 19)]  # widened back to "b"
