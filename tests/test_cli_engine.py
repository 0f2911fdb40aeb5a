from __future__ import annotations

import json

import pytest

from deid_core.cli import main
from deid_core.corpus import read_jsonl, write_jsonl
from deid_core.engine.model import DeidModel
from deid_core.synthetic import generate_notes


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli")
    write_jsonl(root / "train.jsonl", generate_notes(30, seed=21))
    write_jsonl(root / "dev.jsonl", generate_notes(8, seed=22))
    return root


@pytest.fixture(scope="module")
def model_dir(files):
    out = files / "model"
    rc = main([
        "train", "--data", str(files / "train.jsonl"), "--dev", str(files / "dev.jsonl"),
        "--lang", "en", "--scheme", "i2b2_2014", "--out", str(out), "--max-iterations", "25",
        "--sequence", "line",
    ])
    assert rc == 0
    return out


def test_train_writes_model_with_dev_metrics(model_dir, capsys) -> None:
    metrics = json.loads((model_dir / "metrics.json").read_text())
    micro = metrics["dev"]["strict"]["micro"]
    assert set(micro) >= {"precision", "recall", "f1"}
    assert metrics["dev_documents"] == 8
    assert "examples" not in metrics["dev"].get("errors", {})  # no note text in a model dir
    training = json.loads((model_dir / "training.json").read_text())
    assert training["documents"] == 30
    assert DeidModel.load(model_dir).config.sequence == "line"  # --sequence is kept with the model


def test_predict_evaluate_and_sweep(files, model_dir, capsys) -> None:
    out = files / "pred.jsonl"
    capsys.readouterr()
    assert main([
        "predict", "--model", str(model_dir), "--input", str(files / "dev.jsonl"),
        "--output", str(out), "--bias", "-0.5",
    ]) == 0
    preds = read_jsonl(out)
    gold = read_jsonl(files / "dev.jsonl")
    assert [d.id for d in preds] == [d.id for d in gold]
    for doc in preds:
        assert {"logprob", "logprob_per_token", "model_version", "bias"} <= set(doc.meta)
        assert doc.meta["bias"] == -0.5
        # Propagation (issue 14) adds spans with the source "propagated".
        assert all(s.source.startswith(("crf:", "rule:", "propagated")) for s in doc.spans)
    raw = json.loads(out.read_text().splitlines()[0])
    assert all("source" in s and "score" in s for s in raw["spans"])

    capsys.readouterr()
    assert main(["evaluate", "--gold", str(files / "dev.jsonl"), "--pred", str(out), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert {"strict", "relaxed", "token", "char", "errors", "spearman_logprob_f1"} <= set(result)
    assert set(result["strict"]) >= {"micro", "macro", "per_label"}
    assert main(["evaluate", "--gold", str(files / "dev.jsonl"), "--pred", str(out)]) == 0
    assert capsys.readouterr().out.strip()

    assert main([
        "bias-sweep", "--model", str(model_dir), "--gold", str(files / "dev.jsonl"),
        "--from", "-2", "--to", "1", "--step", "0.5", "--json",
    ]) == 0
    sweep = json.loads(capsys.readouterr().out)
    assert [p["bias"] for p in sweep["points"]] == [-2.0, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0]
    assert "first_bias_char_recall_0_99" in sweep
    for p in sweep["points"]:
        assert set(p["strict"]) == set(p["token"]) == set(p["char"]) == {"precision", "recall", "f1"}
    assert main([
        "bias-sweep", "--model", str(model_dir), "--gold", str(files / "dev.jsonl"),
        "--from", "0", "--to", "0.5", "--step", "0.5",
    ]) == 0
    assert "largest bias reaching" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["predict", "--model", "{root}/nope", "--input", "{root}/dev.jsonl", "--output", "{root}/o.jsonl"], "does not exist"),
        (["predict", "--model", "{model}", "--input", "{root}/bad.jsonl", "--output", "{root}/o.jsonl"], "bad.jsonl, line 2"),
        (["bias-sweep", "--model", "{model}", "--gold", "{root}/dev.jsonl", "--step", "0"], "step must be positive"),
        (["train", "--data", "{root}/bad.jsonl", "--out", "{root}/m2"], "bad.jsonl, line 2"),
    ],
)
def test_errors_are_reported_not_raised(files, model_dir, capsys, argv, message) -> None:
    good = (files / "dev.jsonl").read_text().splitlines()[0]
    (files / "bad.jsonl").write_text(good + "\n{broken\n", encoding="utf-8")
    args = [a.format(root=files, model=model_dir) for a in argv]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "error: " in err and message in err
    assert not (files / "o.jsonl").exists() and not (files / "m2").exists()
