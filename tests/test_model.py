from __future__ import annotations

import dataclasses
import json
import shutil

import numpy as np
import pytest

from deid_core.engine.crf import open_crf
from deid_core.engine.gazetteers import Gazetteer
from deid_core.engine.model import (
    CRF_FILE,
    MANIFEST,
    REQUIRED_FILES,
    DeidModel,
    TrainConfig,
    bias_grid,
    learn_rule_mapping,
    train_model,
    unshadowed,
    with_config,
)
from deid_core.engine.tagging import OUTSIDE
from deid_core.engine.tokenize import tokenize
from deid_core.errors import ModelError
from deid_core.evaluation.bias_sweep import bias_sweep
from deid_core.schemes import load_scheme
from deid_core.spans import Document, Span, find_overlap
from deid_core.synthetic import generate_notes

CONFIG = TrainConfig(max_iterations=30)


@pytest.fixture(scope="module")
def corpus() -> tuple[list[Document], list[Document]]:
    return generate_notes(40, seed=11), generate_notes(12, seed=12)


@pytest.fixture(scope="module")
def trained(corpus, tmp_path_factory):
    train, _ = corpus
    seen: list[tuple[str, float]] = []
    model = train_model(
        train, lang="en", scheme=load_scheme("i2b2_2014"), config=CONFIG,
        progress=lambda m, f: seen.append((m, f)),
    )
    path = tmp_path_factory.mktemp("models") / "m1"
    model.save(path)
    return model, path, seen


def test_training_reports_progress_and_metadata(trained, corpus) -> None:
    model, _, seen = trained
    fractions = [f for _, f in seen]
    assert fractions[-1] == 1.0 and all(0.0 <= f <= 1.0 for f in fractions)
    assert any(m.startswith("CRF iteration") for m, _ in seen)
    meta = model.metadata
    assert meta["documents"] == len(corpus[0])
    assert meta["tokens"] > 0 and meta["hyperparameters"]["max_iterations"] == 30
    assert set(meta["seconds"]) == {"features", "crf", "total"}
    assert model.tag_names[0] == OUTSIDE or OUTSIDE in model.tag_names
    assert model.scheme.name == "i2b2_2014"


def _reference_sentences(model: DeidModel, doc: Document) -> list[list[list[str]]]:
    """The attribute strings of each CRF sequence, built the way training builds them."""
    from deid_core.engine.model import sequence_bounds

    tok = tokenize(doc.text, model.lang)
    rules = model.rules.find(doc.text) if model.rules is not None else []
    flat = [f for sent in model.extractor.sentence_features(tok, rules) for f in sent]
    return [flat[a:b] for a, b in sequence_bounds(tok, model.config.sequence)]


def test_pipeline_decoder_equals_crfsuite(trained, corpus) -> None:
    """Cached type rows + context attributes give exactly CRFsuite's tags and marginals."""
    model, path, _ = trained
    crf = open_crf(path / CRF_FILE)
    worst = 0.0
    for doc in corpus[1]:
        pred = model.predict(doc)
        xs = _reference_sentences(model, doc)
        assert list(pred.tags) == [t for seq in crf.predict(xs) for t in seq]
        ref = [m for seq in crf.predict_marginals(xs) for m in seq]
        for k, row in enumerate(ref):
            for label, p in row.items():
                worst = max(worst, abs(pred.marginals[k, model.tag_names.index(label)] - p))
    assert worst < 1e-5


def test_prediction_shape_and_document(trained, corpus) -> None:
    model, _, _ = trained
    doc = corpus[1][0]
    pred = model.predict(doc)
    assert pred.n_tokens == len(pred.tokens) == len(pred.tags) == pred.marginals.shape[0]
    assert pred.marginals.shape[1] == len(pred.tag_names)
    np.testing.assert_allclose(pred.marginals.sum(axis=1), 1.0)
    assert pred.logprob <= 0.0
    # One log P per tokenizer sentence; a part's labels are at least as likely as the whole note's.
    assert len(pred.sentence_logprobs) == len(tokenize(doc.text, model.lang).sentences)
    assert all(pred.logprob - 1e-9 <= lp <= 1e-9 for lp in pred.sentence_logprobs)
    assert pred.logprob_per_token == pytest.approx(pred.logprob / pred.n_tokens)
    assert find_overlap(pred.spans) is None
    assert all(s.source.startswith(("crf:", "rule:")) for s in pred.spans)
    assert all(0.0 <= s.score <= 1.0 for s in pred.spans)
    out = pred.to_document(doc)
    assert out.text == doc.text and out.spans == tuple(sorted(out.spans, key=lambda s: (s.start, s.end, s.label, s.source)))
    assert out.meta["model_version"] == model.version and out.meta["bias"] == 0.0
    assert out.meta["logprob"] == pred.logprob and out.meta["synthetic"] is True
    with pytest.raises(ModelError):
        pred.to_document(corpus[1][1])


def test_near_misses_lie_outside_spans(trained, corpus) -> None:
    model, _, _ = trained
    pred = model.predict(corpus[1][1])
    o = pred.tag_names.index(OUTSIDE)
    misses = pred.near_misses(threshold=0.05)
    for miss in misses:
        assert not any(miss.overlaps(s) for s in pred.spans)
        assert miss.score >= 0.05 and miss.label in model.labels
    k_of = {t.start: k for k, t in enumerate(pred.tokens)}
    for miss in misses:
        assert miss.score == pytest.approx(1 - pred.marginals[k_of[miss.start], o])
    assert len(pred.near_misses(threshold=0.9)) <= len(misses)


def test_punctuation_is_never_a_near_miss() -> None:
    """A signature's "--" next to a likely DOCTOR is not itself a place to look."""
    import numpy as np

    from deid_core.engine.model import Prediction
    from deid_core.engine.tokenize import Token

    tokens = (Token("--", 0, 2, 0, True), Token("Smith", 3, 8, 0, False), Token("RN", 10, 12, 0, False))
    names = ("O", "B-DOCTOR", "I-DOCTOR")
    marginals = np.array([[0.6, 0.4, 0.0], [0.5, 0.5, 0.0], [0.9, 0.1, 0.0]])
    pred = Prediction("d", (), 0.0, 0.0, (), 3, tokens, ("O", "O", "O"), names, marginals)
    assert [(m.start, m.end, m.label) for m in pred.near_misses(0.2)] == [(3, 8, "DOCTOR")]


def test_more_negative_bias_finds_at_least_as_much(trained, corpus) -> None:
    model, _, _ = trained
    for doc in corpus[1][:4]:
        enc = model.encode(doc)
        previous = -1
        for bias in (2.0, 1.0, 0.0, -1.0, -2.0, -4.0, -8.0):
            pred = model.decode(enc, bias)
            non_o = sum(t != OUTSIDE for t in pred.tags)
            assert non_o >= previous
            previous = non_o


def test_decode_many_equals_decode(trained, corpus) -> None:
    model, _, _ = trained
    grid = bias_grid(-4, 2, 0.25)
    for doc in corpus[1][:5]:
        enc = model.encode(doc)
        for pred, b in zip(model.decode_many(enc, grid), grid):
            single = model.decode(enc, b)
            assert pred.tags == single.tags and pred.spans == single.spans
            assert pred.logprob == pytest.approx(single.logprob)


def test_round_trip(trained, corpus) -> None:
    model, path, _ = trained
    again = DeidModel.load(path)
    assert again.version == model.version and again.lang == "en"
    assert again.scheme == model.scheme and again.rule_mapping == model.rule_mapping
    assert again.config == model.config and again.metadata == model.metadata
    for doc in corpus[1][:3]:
        a, b = model.predict(doc, -1.0), again.predict(doc, -1.0)
        assert a.spans == b.spans and a.logprob == b.logprob
    manifest = json.loads((path / MANIFEST).read_text())
    assert manifest["format_version"] == 1 and set(REQUIRED_FILES) <= set(manifest["files"])


def test_save_failure_leaves_nothing_half_written(trained, tmp_path, monkeypatch) -> None:
    model, _, _ = trained

    def boom(self, path):  # noqa: ANN001
        raise OSError("disk full")

    monkeypatch.setattr(Gazetteer, "save", boom)
    with pytest.raises(OSError):
        model.save(tmp_path / "fresh")
    assert not (tmp_path / "fresh").exists()
    assert list(tmp_path.iterdir()) == []
    monkeypatch.undo()
    model.save(tmp_path / "kept")
    before = (tmp_path / "kept" / MANIFEST).read_bytes()
    monkeypatch.setattr(Gazetteer, "save", boom)
    with pytest.raises(OSError):
        model.save(tmp_path / "kept")
    assert (tmp_path / "kept" / MANIFEST).read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept"]
    monkeypatch.undo()
    DeidModel.load(tmp_path / "kept")


@pytest.mark.parametrize(
    ("damage", "names"),
    [
        (lambda d: shutil.rmtree(d), "does not exist"),
        (lambda d: (d / MANIFEST).unlink(), MANIFEST),
        (lambda d: (d / MANIFEST).write_text('{"format_version": 7}'), "version 7"),
        (lambda d: (d / MANIFEST).write_text("{not json"), MANIFEST),
        *[((lambda name: lambda d: (d / name).unlink())(n), n) for n in REQUIRED_FILES],
        (lambda d: (d / CRF_FILE).write_bytes((d / CRF_FILE).read_bytes()[:-8]), CRF_FILE),
        (lambda d: (d / "rule_mapping.json").write_text('{"mapping": {}}'), "rule_mapping.json"),
        (lambda d: (d / "rules.yaml").unlink(), "rules.yaml"),
        (lambda d: (d / "filters.yaml").write_text("filters: []\n"), "filters.yaml"),
    ],
)
def test_bad_model_directories(trained, tmp_path, damage, names: str) -> None:
    _, path, _ = trained
    copy = tmp_path / "model"
    shutil.copytree(path, copy)
    damage(copy)
    with pytest.raises(ModelError, match=names.replace(".", r"\.")):
        DeidModel.load(copy)


@pytest.mark.parametrize(
    ("pairs", "expected"),
    [
        # 3 of 3 agree -> mapped
        ([([Span(0, 2, "PHONE", "rule:tel")], [Span(0, 2, "NUMERO_TELEFONO")])] * 3, {"rule:tel": "NUMERO_TELEFONO"}),
        # 2 of 4 agree -> precision 0.5 < 0.7: a feature only
        (
            [([Span(0, 2, "DATE", "rule:d")], [Span(0, 2, "FECHAS")])] * 2
            + [([Span(0, 2, "DATE", "rule:d")], [])] * 2,
            {},
        ),
        # extent must match exactly
        ([([Span(0, 3, "ID", "rule:id")], [Span(0, 2, "IDNUM")])] * 5, {}),
        # too few matches
        ([([Span(0, 2, "ID", "rule:id")], [Span(0, 2, "IDNUM")])] * 2, {}),
    ],
)
def test_rule_mapping(pairs, expected) -> None:
    mapping, stats = learn_rule_mapping(pairs, min_precision=0.7, min_count=3)
    assert mapping == expected
    assert set(stats) == {s.source for rules, _ in pairs for s in rules}


def test_rule_mapping_keeps_declared_standalone_labels() -> None:
    """A standalone rule that never (or rarely) fired in training keeps its own label."""
    noisy = Span(0, 2, "DATE", "rule:noisy")
    pairs = [([noisy], [])] * 3 + [([], [Span(0, 5, "PHONE")])]
    declared = {"rule:pager_cue": "PHONE", "rule:noisy": "DATE", "rule:rare": "PHONE"}
    mapping, stats = learn_rule_mapping(pairs, min_precision=0.7, min_count=3, declared=declared)
    # never matched: declared label; 3 matches that all disagree with the gold: evidence against
    assert mapping == {"rule:pager_cue": "PHONE", "rule:rare": "PHONE"}
    assert stats["rule:pager_cue"]["declared"] == "PHONE" and stats["rule:pager_cue"]["matches"] == 0
    assert "declared" not in stats["rule:noisy"]
    # without declared labels the old behaviour: unmatched rules are features only
    assert learn_rule_mapping(pairs, min_precision=0.7, min_count=3)[0] == {}


def test_unshadowed_drops_rule_spans_inside_longer_same_label_spans() -> None:
    one = Span(0, 4, "PATIENT", "rule:kin_name")  # "Mary" of "Mary Smith"
    two = Span(0, 10, "PATIENT", "rule:kin_name_2w")
    twin = Span(0, 10, "PATIENT", "rule:other")  # the same extent from another rule is kept
    date = Span(5, 10, "DATE", "rule:d")  # another label is never shadowed
    phone = Span(20, 32, "PHONE", "rule:phone_mixed")
    intl = Span(17, 32, "PHONE", "rule:phone_international")
    kept = unshadowed([one, two, twin, date, phone, intl])
    assert set(kept) == {two, twin, date, intl}


def test_trained_model_keeps_a_standalone_rule_that_never_matched(corpus) -> None:
    """The built-in pager rule stays active although no training note has a pager number."""
    docs = [d for d in corpus[0] if "pager" not in d.text.lower()][:20]
    model = train_model(
        docs, lang="en", scheme=load_scheme("i2b2_2014"), config=TrainConfig(max_iterations=5)
    )
    assert model.rule_mapping.get("rule:pager_cue") == "PHONE"
    text = "Please page me, pager #70925, with questions."
    encoded = model.encode(Document("p1", text))
    # the rule's span reaches the merge as PHONE ...
    assert any(text[s.start : s.end] == "70925" and s.label == "PHONE" for s in encoded.rule_spans)
    # ... and the number is masked: by the rule, or by a longer CRF span around it (which wins
    # by design, `_uncovered_rules`; this 5-iteration toy CRF may read "#70925" as a date)
    spans = model.decode(encoded, 0.0).spans
    assert any(s.start <= text.index("70925") and s.end >= text.index("70925") + 5 for s in spans)


@pytest.mark.parametrize(
    ("args", "expected"),
    [((-1, 1, 0.5), [-1.0, -0.5, 0.0, 0.5, 1.0]), ((0, 0.3, 0.1), [0.0, 0.1, 0.2, 0.3]), ((2, 2, 1), [2.0])],
)
def test_bias_grid(args, expected) -> None:
    assert bias_grid(*args) == expected


@pytest.mark.parametrize("args", [(0, 1, 0), (1, 0, 0.5), (0, 1, -1)])
def test_bias_grid_rejects(args) -> None:
    with pytest.raises(ModelError):
        bias_grid(*args)


def test_bias_sweep_contract(trained, corpus) -> None:
    model, _, _ = trained
    result = bias_sweep(model, corpus[1][:6], [1.0, -3.0, 0.0])
    biases = [p["bias"] for p in result["points"]]
    assert biases == [-3.0, 0.0, 1.0]
    for p in result["points"]:
        for key in ("strict", "token", "char"):
            assert set(p[key]) == {"precision", "recall", "f1"}
    first = result["first_bias_char_recall_0_99"]
    reaching = [p["bias"] for p in result["points"] if p["char"]["recall"] >= 0.99]
    assert first == (max(reaching) if reaching else None)


def test_training_errors(corpus) -> None:
    with pytest.raises(ModelError, match="empty"):
        train_model([], lang="en")
    with pytest.raises(ModelError, match="not in label scheme"):
        train_model(corpus[0][:3], lang="en", scheme=load_scheme("meddocan"))
    no_phi = [Document("a", "Nothing to see here.")]
    with pytest.raises(ModelError, match="no PHI"):
        train_model(no_phi, lang="en", config=CONFIG)


def test_config_round_trip_and_switches(corpus) -> None:
    cfg = with_config(CONFIG, c1=0.2, features={"gazetteer": False, "window": 1}, word_lists=("a.txt",))
    assert TrainConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg
    bare = train_model(
        corpus[0][:15], lang="en",
        config=with_config(CONFIG, max_iterations=10, use_filters=False, features={"rules": False, "gazetteer": False}),
    )
    assert bare.rules is None and bare.rule_mapping == {} and len(bare.gazetteer) == 0
    pred = bare.predict(corpus[1][0])
    assert all(s.source.startswith("crf:") for s in pred.spans)


@pytest.mark.parametrize(
    ("mode", "expected"),
    [("sentence", 3), ("line", 2), ("note", 1)],
)
def test_sequence_bounds(mode: str, expected: int) -> None:
    from deid_core.engine.model import sequence_bounds

    tok = tokenize("Lives at Apt. 5 Main St. Today.\nNext line here.", "en")
    bounds = sequence_bounds(tok, mode)
    assert len(bounds) == expected
    assert bounds[0][0] == 0 and bounds[-1][1] == len(tok.tokens)
    assert all(a < b for a, b in bounds)
    with pytest.raises(ModelError):
        sequence_bounds(tok, "paragraph")


def test_sentence_logprobs_add_up_when_sentences_are_the_sequences(trained, corpus) -> None:
    _, path, _ = trained
    model = DeidModel.load(path)
    model.config = dataclasses.replace(model.config, sequence="sentence")
    pred = model.predict(corpus[1][0], bias=-1.0)
    assert len(pred.sentence_logprobs) > 1
    assert pred.logprob == pytest.approx(sum(pred.sentence_logprobs), abs=1e-8)


def test_emission_row_cache_reset_keeps_scores(trained, corpus) -> None:
    model, path, _ = trained
    small = DeidModel.load(path)
    small._scorer.max_rows = 40  # forces the word-row table to reset within every note
    for doc in corpus[1][:3]:
        np.testing.assert_allclose(small.encode(doc).emissions, model.encode(doc).emissions, atol=1e-12)


@pytest.mark.parametrize("text", ["", "   \n\n  ", "\ufeff"])
def test_empty_notes(trained, text: str) -> None:
    model, _, _ = trained
    doc = Document("empty", text)
    pred = model.predict(doc, bias=-2.0)
    assert pred.spans == () and pred.n_tokens == 0 and pred.logprob == 0.0
    assert pred.near_misses() == []
    assert [p.spans for p in model.decode_many(model.encode(doc), [-1.0, 1.0])] == [(), ()]
    assert pred.to_document(doc).meta["logprob"] == 0.0


@pytest.mark.parametrize(
    ("rules", "crf", "kept"),
    [
        ([Span(2, 7, "ZIP", "rule:cp")], [Span(0, 7, "TERRITORIO", "crf:v")], []),  # strictly inside: dropped
        ([Span(0, 7, "ZIP", "rule:cp")], [Span(0, 7, "TERRITORIO", "crf:v")], [0]),  # same extent: rule wins later
        ([Span(5, 9, "ZIP", "rule:cp")], [Span(0, 7, "TERRITORIO", "crf:v")], [0]),  # overlaps only
        ([Span(0, 3, "A", "rule:a"), Span(10, 12, "B", "rule:b")], [Span(9, 15, "B", "crf:v")], [0]),
        ([Span(0, 3, "A", "rule:a")], [], [0]),
    ],
)
def test_rule_spans_inside_longer_crf_spans_yield(rules, crf, kept) -> None:
    from deid_core.engine.model import _uncovered_rules

    assert _uncovered_rules(rules, crf) == [rules[i] for i in kept]


def test_model_keeps_its_own_rules_and_filters(trained, corpus, monkeypatch) -> None:
    """A later edit of the built-in rule files must not change a trained model."""
    import deid_core.engine.model as model_module

    model, path, _ = trained
    assert (path / "rules.yaml").read_text(encoding="utf-8") == model.rules_text
    assert (path / "filters.yaml").is_file()

    def unavailable(kind, lang, p):  # noqa: ANN001
        raise AssertionError("a saved model must not read the built-in files")

    monkeypatch.setattr(model_module, "_data_text", unavailable)
    again = DeidModel.load(path)
    doc = corpus[1][2]
    assert again.predict(doc).spans == model.predict(doc).spans
