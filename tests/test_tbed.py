"""TBED (paper 003): the learner recovers planted systematic errors; transformations as YAML data."""

from __future__ import annotations

import random

import pytest

from deid_core.engine.model import MANIFEST, TRANSFORMS_FILE, DeidModel, TrainConfig
from deid_core.engine.tokenize import tokenize
from deid_core.engine.transforms import Transform, TransformSet
from deid_core.errors import RuleError
from deid_core.learning.tbed import TBEDConfig, learn_transforms, train_with_transforms
from deid_core.spans import Document, Span

NAMES = ["Adams", "Baker", "Clark", "Davis", "Evans", "Foster", "Garcia", "Hughes", "Irwin", "Jones"]
MONTHS = ["March", "April", "May", "June"]


def planted(n: int, seed: int) -> tuple[list[Document], list[list[Span]]]:
    """Gold notes and predictions with three systematic errors and some random noise.

    * a name after "dr" is predicted PATIENT (gold DOCTOR): relabel;
    * a room number after "room" is missed: add a one-token span;
    * a date "March 3" is predicted as "March" only: extend right.
    """
    rng = random.Random(seed)
    docs, preds = [], []
    for i in range(n):
        text = ""
        gold: list[Span] = []
        pred: list[Span] = []

        def put(s: str) -> int:
            nonlocal text
            at = len(text)
            text += s
            return at

        put("Seen by dr ")
        name = rng.choice(NAMES)
        at = put(name)
        gold.append(Span(at, at + len(name), "DOCTOR", "gold"))
        pred.append(Span(at, at + len(name), "PATIENT", "crf:v"))
        put(f" {rng.choice(['today', 'again', 'twice', 'earlier'])}.\nPatient ")
        name = rng.choice(NAMES)
        at = put(name)
        gold.append(Span(at, at + len(name), "PATIENT", "gold"))
        pred.append(Span(at, at + len(name), "PATIENT", "crf:v"))
        put(" called by son ")
        name = rng.choice(NAMES)
        at = put(name)
        gold.append(Span(at, at + len(name), "PATIENT", "gold"))
        pred.append(Span(at, at + len(name), "PATIENT", "crf:v"))
        put(" and moved to room ")
        room = str(rng.randint(100, 999))
        at = put(room)
        gold.append(Span(at, at + len(room), "ROOM", "gold"))
        put(" on ")
        month, day = rng.choice(MONTHS), str(rng.randint(1, 28))
        at = put(f"{month} {day}")
        gold.append(Span(at, at + len(month) + 1 + len(day), "DATE", "gold"))
        pred.append(Span(at, at + len(month), "DATE", "crf:v"))
        put(".\n")
        if rng.random() < 0.2:  # noise: a stray false positive on a filler word
            at = put("Stable ")
            pred.append(Span(at, at + 6, "PATIENT", "crf:v"))
        docs.append(Document(f"p{seed}-{i}", text, tuple(gold)))
        preds.append(pred)
    return docs, preds


def strict_f1(docs: list[Document], preds: list[list[Span]]) -> float:
    tp = n_pred = n_gold = 0
    for d, p in zip(docs, preds):
        g = {(s.start, s.end, s.label) for s in d.spans}
        q = {(s.start, s.end, s.label) for s in p}
        tp += len(g & q)
        n_pred += len(q)
        n_gold += len(g)
    return 2 * tp / (n_pred + n_gold)


@pytest.fixture(scope="module")
def learned() -> TransformSet:
    docs, preds = planted(60, seed=1)
    return learn_transforms(docs, preds, lang="en", config=TBEDConfig(min_gain=3))


def test_learner_recovers_the_planted_errors(learned: TransformSet) -> None:
    actions = {(t.action, t.to, t.label) for t in learned.transforms}
    assert ("relabel", "DOCTOR", "PATIENT") in actions
    assert ("add", "ROOM", None) in actions
    assert ("extend_right", None, "DATE") in actions
    relabel = next(t for t in learned.transforms if t.action == "relabel")
    assert ("before1", "word", "dr") in relabel.conditions
    assert all(t.gain >= 3 for t in learned.transforms)
    # On fresh notes with the same errors the rules correct them.
    docs, preds = planted(30, seed=2)
    fixed = [learned.apply(tokenize(d.text, "en").tokens, p) for d, p in zip(docs, preds)]
    assert strict_f1(docs, preds) < 0.75
    assert strict_f1(docs, fixed) > 0.97
    assert any(s.source.startswith("rule:tbed-") for p in fixed for s in p)


def test_yaml_round_trip_and_determinism(learned: TransformSet) -> None:
    text = learned.to_yaml()
    assert TransformSet.from_yaml(text) == learned
    docs, preds = planted(60, seed=1)
    again = learn_transforms(docs, preds, lang="en", config=TBEDConfig(min_gain=3))
    assert again.to_yaml() == text


def test_nothing_to_learn_from_perfect_predictions() -> None:
    docs, _ = planted(20, seed=3)
    assert len(learn_transforms(docs, [list(d.spans) for d in docs], lang="en")) == 0


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("format_version: 2\ntransforms: []", "format_version"),
        ("format_version: 1\ntransforms: {a: 1}", "must be a list"),
        ("format_version: 1\ntransforms:\n- {name: a, target: span, if: {first.word: x}, do: delete}", "label"),
        ("format_version: 1\ntransforms:\n- {name: a, target: span, label: X, if: {middle.word: x}, do: delete}",
         "unknown position"),
        ("format_version: 1\ntransforms:\n- {name: a, target: span, label: X, if: {first.colour: x}, do: delete}",
         "unknown field"),
        ("format_version: 1\ntransforms:\n- {name: a, target: token, if: {token.word: x}, do: delete}", "action"),
        ("format_version: 1\ntransforms:\n- {name: a, target: token, if: {token.word: x}, do: add}", "'to'"),
        ("format_version: 1\ntransforms:\n- {name: a, target: span, label: X, if: {}, do: delete}", "'if'"),
        ("format_version: 1\ntransforms:\n- {name: a, target: span, label: X, if: {first.word: x}, do: delete}\n"
         "- {name: a, target: span, label: X, if: {first.word: y}, do: delete}", "duplicate"),
        ("format_version: 1\ntransforms: [\n", "not valid YAML"),
    ],
)
def test_bad_transform_files_name_the_problem(body: str, message: str) -> None:
    with pytest.raises(RuleError, match=message) as err:
        TransformSet.from_yaml(body, origin="site.yaml")
    assert "site.yaml" in str(err.value)


def test_actions_respect_neighbours() -> None:
    text = "aa bb cc dd"
    toks = tokenize(text, "en").tokens
    spans = [Span(0, 2, "X", "crf:v"), Span(6, 8, "Y", "crf:v")]
    grow = TransformSet((Transform("g", "span", "X", (("first", "word", "aa"),), "extend_right"),))
    assert grow.apply(toks, spans)[0] == Span(0, 5, "X", "rule:g")
    # never into another span; shrinking never below one token
    grow_y = TransformSet((Transform("g", "span", "Y", (("first", "word", "cc"),), "extend_left"),))
    blocked = grow_y.apply(toks, [Span(0, 5, "X", "crf:v"), Span(6, 8, "Y", "crf:v")])
    assert blocked[1] == Span(6, 8, "Y", "crf:v")
    shrink = TransformSet((Transform("s", "span", "X", (("first", "word", "aa"),), "shrink_left"),))
    assert shrink.apply(toks, spans) == spans


def test_trained_model_keeps_editable_transforms(tmp_path) -> None:
    docs, _ = planted(24, seed=4)
    model = train_with_transforms(
        docs, lang="en", config=TrainConfig(max_iterations=15, builtin_gazetteer=False),
        tbed=TBEDConfig(folds=2, min_gain=2),
    )
    assert model.transforms is not None and model.metadata["tbed"]["rules"] == len(model.transforms)
    path = model.save(tmp_path / "m")
    import json

    assert json.loads((path / MANIFEST).read_text())["editable"] == [TRANSFORMS_FILE]
    loaded = DeidModel.load(path)
    assert loaded.transforms == model.transforms
    # A hand edit is picked up (no checksum failure), and a broken one names the file.
    hand = TransformSet((Transform("hand-1", "token", None, (("token", "word", "zorblat"),), "add", "PATIENT"),))
    (path / TRANSFORMS_FILE).write_text(hand.to_yaml(), encoding="utf-8")
    edited = DeidModel.load(path)
    doc = Document("x", "Zorblat after dr Adams.")
    assert any(s.source == "rule:hand-1" for s in edited.predict(doc).spans)
    (path / TRANSFORMS_FILE).write_text("format_version: 1\ntransforms: [{}]\n", encoding="utf-8")
    with pytest.raises(RuleError, match=TRANSFORMS_FILE):
        DeidModel.load(path)


def test_cli_trains_both_stages_and_checks_the_transform_file(tmp_path, capsys) -> None:
    import json

    from deid_core.cli import main
    from deid_core.corpus import write_jsonl
    from deid_core.synthetic import generate_notes

    write_jsonl(tmp_path / "train.jsonl", generate_notes(16, seed=31))
    out = tmp_path / "model"
    assert main([
        "train", "--data", str(tmp_path / "train.jsonl"), "--lang", "en", "--out", str(out),
        "--max-iterations", "10", "--charcrf", "windows", "--tbed", "2",
    ]) == 0
    model = DeidModel.load(out)
    assert model.char is not None and model.transforms is not None
    assert model.config.charcrf is not None and model.config.charcrf.mode == "windows"
    capsys.readouterr()
    assert main(["rules", "check", "--json", "--transforms", str(out / TRANSFORMS_FILE)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["transforms"]["count"] == len(model.transforms)
    bad = tmp_path / "bad.yaml"
    bad.write_text("format_version: 1\ntransforms:\n- {name: t1, target: token, if: {token.word: x}, do: add}\n")
    assert main(["rules", "check", "--transforms", str(bad)]) == 1
    err = capsys.readouterr().err
    assert "bad.yaml" in err and "t1" in err
