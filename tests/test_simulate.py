"""The simulation loop on tiny generated corpora: shape of the contract, rounds, determinism."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from deid_core.cli import main
from deid_core.cli.active import STRATEGY_NAMES
from deid_core.corpus import write_jsonl
from deid_core.engine.model import DeidModel, TrainConfig
from deid_core.learning.active import (
    STRATEGIES,
    CRFEstimator,
    DocumentLearner,
    as_object_array,
    get_strategy,
)
from deid_core.learning.simulate import curve_schedule, simulate, summarise
from deid_core.synthetic import generate_notes

FAST = replace(TrainConfig(), max_iterations=10)


@pytest.fixture(scope="module")
def corpora():  # noqa: ANN201
    notes = generate_notes(45, seed=3)
    return notes[:30], notes[30:]


@pytest.mark.parametrize(
    ("n_pool", "seed", "batch", "budget", "expected"),
    [
        (30, 10, 5, 20, [10, 15, 20]),
        (30, 10, 5, 300, [10, 15, 20, 25, 30]),
        (30, 10, 7, 20, [10, 17, 20]),
        (8, 10, 5, 300, [8]),
    ],
)
def test_curve_schedule(n_pool, seed, batch, budget, expected) -> None:  # noqa: ANN001
    assert curve_schedule(n_pool, seed, batch, budget) == expected


def test_summarise_averages_repeats() -> None:
    a = [{"docs": 10, "tokens": 100, "strict_f1": 0.2, "char_recall": 0.4, "train_seconds": 0.0}]
    b = [{"docs": 10, "tokens": 300, "strict_f1": 0.4, "char_recall": 0.6, "train_seconds": 0.0}]
    (p,) = summarise([a, b])
    assert p["docs"] == 10 and p["tokens"] == 200
    assert p["strict_f1"] == pytest.approx(0.3) and p["char_recall"] == pytest.approx(0.5)
    assert p["strict_f1_std"] == pytest.approx(0.1)


def test_two_rounds_on_generated_notes(corpora) -> None:  # noqa: ANN001
    pool, test = corpora
    seen: list[float] = []
    result = simulate(
        pool, test, strategies=["least_confident", "random"], seed_docs=5, batch=5, budget=15,
        repeats=1, config=FAST, seed=1, progress=lambda m, f: seen.append(f),
    )
    assert set(result) >= {"full_pool", "strategies"}
    assert set(result["full_pool"]) >= {"strict_f1", "char_recall"}
    for name in ("least_confident", "random"):
        curve = result["strategies"][name]["curve"]
        assert [p["docs"] for p in curve] == [5, 10, 15]
        tokens = [p["tokens"] for p in curve]
        assert tokens == sorted(tokens) and tokens[0] > 0
        assert all(0.0 <= p["strict_f1"] <= 1.0 and 0.0 <= p["char_recall"] <= 1.0 for p in curve)
    # both strategies start from the same seed model
    lc, rnd = (result["strategies"][n]["curve"][0] for n in ("least_confident", "random"))
    assert lc == rnd
    # the CRF learns something from 15 notes, and the full pool does at least as well on recall
    assert result["strategies"]["random"]["curve"][-1]["char_recall"] > 0.3
    assert seen == sorted(seen) and seen[-1] == pytest.approx(1.0)
    json.dumps(result)  # the contract is JSON


def test_simulation_is_deterministic(corpora) -> None:  # noqa: ANN001
    pool, test = corpora
    kwargs = dict(strategies=["entropy"], seed_docs=5, batch=5, budget=10, repeats=1,
                  config=FAST, seed=4, full_pool=False)
    a = simulate(pool, test, **kwargs)
    b = simulate(pool, test, **kwargs)

    def strip(res):  # noqa: ANN001, ANN202
        return {n: [{k: v for k, v in p.items() if "seconds" not in k} for p in d["curve"]]
                for n, d in res["strategies"].items()}

    assert strip(a) == strip(b)


def test_parallel_workers_match_a_serial_run(corpora) -> None:  # noqa: ANN001
    pool, test = corpora
    kwargs = dict(strategies=["random"], seed_docs=5, batch=5, budget=10, repeats=2,
                  config=FAST, seed=2, full_pool=False)
    serial = simulate(pool, test, **kwargs)
    parallel = simulate(pool, test, workers=2, **kwargs)

    def strip(res):  # noqa: ANN001, ANN202
        return [{k: v for k, v in p.items() if "seconds" not in k} for p in res["strategies"]["random"]["curve"]]

    assert strip(serial) == strip(parallel)


def test_learner_with_the_real_crf_picks_unlabelled_notes(corpora) -> None:  # noqa: ANN001
    pool, _ = corpora
    X = as_object_array(pool)
    learner = DocumentLearner(
        estimator=CRFEstimator(lang="en", config=FAST),
        query_strategy=get_strategy("margin").function,
        X_training=X[:6],
        y_training=X[:6],
    )
    idx, chosen = learner.query(X[6:], 3)
    assert len(set(idx.tolist())) == 3 and all(d in pool[6:] for d in chosen)
    learner.teach(chosen, chosen)
    assert len(learner.X_training) == 9


def test_unknown_strategy_fails_before_training(corpora) -> None:  # noqa: ANN001
    pool, test = corpora
    with pytest.raises(Exception, match="unknown query strategy"):
        simulate(pool, test, strategies=["nope"], config=FAST)


def test_cli_help_lists_every_strategy() -> None:
    assert STRATEGY_NAMES.split(", ") == list(STRATEGIES)


def test_cli_simulate_json(corpora, tmp_path, capsys) -> None:  # noqa: ANN001
    pool, test = corpora
    write_jsonl(tmp_path / "pool.jsonl", pool)
    write_jsonl(tmp_path / "test.jsonl", test)
    rc = main([
        "simulate", "--pool", str(tmp_path / "pool.jsonl"), "--test", str(tmp_path / "test.jsonl"),
        "--strategy", "phi_mass,random", "--seed-docs", "5", "--batch", "5", "--budget", "10",
        "--repeats", "1", "--max-iterations", "10", "--no-full-pool", "--json",
    ])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out["strategies"]) == {"phi_mass", "random"}
    assert [p["docs"] for p in out["strategies"]["phi_mass"]["curve"]] == [5, 10]


def test_cli_simulate_reports_bad_input(tmp_path, capsys) -> None:  # noqa: ANN001
    bad = tmp_path / "pool.jsonl"
    bad.write_text('{"id": "a", "text": "abc", "spans": [{"start": 2, "end": 9, "label": "X"}]}\n')
    rc = main(["simulate", "--pool", str(bad), "--test", str(bad), "--json"])
    assert rc == 1
    err = capsys.readouterr().err
    assert "pool.jsonl" in err and "line 1" in err


# -- from a starting model: the app's retrain round --------------------------------------

START_POLICY = {"loop_algorithm": "lbfgs", "loop_iterations": 8, "folds": 2}


@pytest.fixture(scope="module")
def start_model_dir(tmp_path_factory):  # noqa: ANN201
    from deid_core.engine.model import train_model
    from deid_core.schemes import load_scheme

    ref = {"kind": "synthetic", "lang": "en", "n": 8, "seed": 21, "options": {}}
    model = train_model(generate_notes(8, seed=21), lang="en", scheme=load_scheme("i2b2_2014"),
                        config=FAST, corpus=ref)
    return model.save(tmp_path_factory.mktemp("start") / "m")


def test_simulate_from_start_model_contract(corpora, start_model_dir, tmp_path, capsys) -> None:  # noqa: ANN001
    pool, test = corpora
    pool_path, test_path = tmp_path / "pool.jsonl", tmp_path / "test.jsonl"
    # the pool speaks another scheme: PATIENT is called PERSON there
    renamed = [d.with_spans(tuple(s if s.label != "PATIENT" else replace(s, label="PERSON")
                                  for s in d.spans)) for d in pool[:12]]
    write_jsonl(pool_path, renamed)
    write_jsonl(test_path, test[:5])
    args = ["simulate", "--start-model", str(start_model_dir), "--pool", str(pool_path),
            "--test", str(test_path), "--strategy", "least_confident", "--batch", "4",
            "--budget", "8", "--repeats", "1", "--algorithm", "lbfgs", "--max-iterations", "8",
            "--folds", "2", "--json"]
    assert main(args) != 0
    err = capsys.readouterr().err
    assert "PERSON" in err and "--label-map" in err
    label_map = tmp_path / "map.json"
    label_map.write_text(json.dumps({"PERSON": "PATIENT"}), encoding="utf-8")
    assert main([*args, "--label-map", str(label_map)]) == 0
    result = json.loads(capsys.readouterr().out)
    assert set(result) >= {"full_pool", "strategies", "settings", "start_model"}
    assert set(result["full_pool"]) >= {"strict_f1", "char_recall", "docs", "tokens", "train_seconds"}
    curve = result["strategies"]["least_confident"]["curve"]
    assert [p["docs"] for p in curve] == [0, 4, 8]
    keys = {"docs", "tokens", "strict_f1", "char_recall", "strict_f1_std", "char_precision",
            "strict_precision", "strict_recall", "accepted", "round_seconds"}
    for p in curve:
        assert keys <= set(p), keys - set(p)
        assert isinstance(p["accepted"], bool)
    assert curve[0]["tokens"] == 0 and curve[-1]["tokens"] > curve[1]["tokens"] > 0
    assert curve[1]["round_seconds"] > 0
    assert result["start_model"]["base_docs"] == 8


def test_one_retrain_path_for_app_and_simulation(tmp_path, monkeypatch, start_model_dir, corpora) -> None:  # noqa: ANN001
    """The app's retrain and simulate both run learning.retrain.retrain_round, nothing else."""
    from app_support import PROJECT, seed_store

    from deid_core.engine.model import DeidModel
    from deid_core.errors import DeidError
    from deid_core.learning import retrain as retrain_module
    from deid_core.learning.simulate import simulate_from_model
    from deid_core.store import repository as repo
    from deid_core.ui.learning import retrain_project

    calls: list[tuple[str, int, str]] = []

    class Stop(DeidError):
        pass

    def spy(reviewed, *, active_model, policy, **kwargs):  # noqa: ANN001, ANN003, ANN202
        calls.append((active_model.version, len(reviewed), policy.adaptation, kwargs.get("bias")))
        raise Stop("spy")

    monkeypatch.setattr(retrain_module, "retrain_round", spy)
    engine = seed_store(f"sqlite:///{tmp_path / 'app.db'}", n_notes=2, n_gold=3)
    start = DeidModel.load(start_model_dir)
    repo.register_model_version(engine, PROJECT, version=start.version,
                                artifact_path=str(start_model_dir), n_train_docs=8, activate=True)
    repo.update_project_settings(engine, PROJECT, {**START_POLICY, "bias": -1.25})
    with pytest.raises(Stop):
        retrain_project(engine, PROJECT, "ada")
    pool, test = corpora
    with pytest.raises(Stop):
        simulate_from_model(start, pool[:6], test[:3], strategies=["random"], batch=3, budget=3,
                            full_pool=False, bias=-1.25)
    # both compare at the project's bias
    assert calls == [(start.version, 3, "augment", -1.25), (start.version, 3, "augment", -1.25)]


def test_simulation_runs_full_rounds_when_the_app_would(monkeypatch, start_model_dir, corpora) -> None:  # noqa: ANN001
    """Every ``full_every`` labelled notes the round trains with the full algorithm, as
    ``maybe_retrain`` does in the app (the starting model counts as a full one)."""
    from deid_core.engine.model import DeidModel
    from deid_core.learning import retrain as retrain_module
    from deid_core.learning.registry import RetrainPolicy
    from deid_core.learning.simulate import simulate_from_model

    seen: list[tuple[int, str | None]] = []
    real = retrain_module.retrain_round

    def spy(reviewed, *, policy, **kwargs):  # noqa: ANN001, ANN003, ANN202
        seen.append((len(reviewed), policy.loop_algorithm))
        return real(reviewed, policy=policy, **kwargs)

    monkeypatch.setattr(retrain_module, "retrain_round", spy)
    pool, test = corpora
    policy = RetrainPolicy(folds=2, loop_iterations=3, full_every=8, full_iterations=5)
    result = simulate_from_model(DeidModel.load(start_model_dir), pool[:12], test[:3], strategies=["random"],
                                 batch=4, budget=12, policy=policy, full_pool=False)
    assert seen == [(4, "pa"), (8, "lbfgs"), (12, "pa")]
    curve = result["strategies"]["random"]["curve"]
    assert [p.get("full") for p in curve] == [None, False, True, False]


def test_simulate_starts_from_the_builtin_starter(corpora, tmp_path, capsys) -> None:  # noqa: ANN001
    """``--start-model builtin`` resolves the bundled starter for --lang (the test-size build)."""
    from deid_core.synthetic.starter import starter_dir

    pool, test = corpora
    pool_path, test_path = tmp_path / "pool.jsonl", tmp_path / "test.jsonl"
    write_jsonl(pool_path, pool[:4])
    write_jsonl(test_path, test[:3])
    args = ["simulate", "--start-model", "builtin", "--lang", "en", "--pool", str(pool_path),
            "--test", str(test_path), "--strategy", "random", "--batch", "4", "--budget", "4",
            "--repeats", "1", "--algorithm", "lbfgs", "--max-iterations", "5", "--folds", "2",
            "--no-full-pool", "--json"]
    assert main(args) == 0
    result = json.loads(capsys.readouterr().out)
    starter = DeidModel.load(starter_dir("en"))
    assert result["start_model"]["version"] == starter.version
    assert result["start_model"]["base_docs"] == starter.metadata["corpus"]["n"]
    assert [p["docs"] for p in result["strategies"]["random"]["curve"]] == [0, 4]
    # Without --bias the loop runs as a new project from the starter does in the app: at the
    # starter's recorded recall bias, following each model's own.
    assert isinstance(starter.metadata["recall_bias"], float)
    assert result["settings"]["bias"] == "recall"
    assert result["settings"]["start_bias"] == starter.metadata["recall_bias"]
    assert result["strategies"]["random"]["curve"][0]["bias"] == starter.metadata["recall_bias"]


def test_simulate_policy_takes_the_in_loop_corpus_budget() -> None:
    import argparse

    from deid_core.cli.active import start_policy

    none = dict.fromkeys(("algorithm", "max_iterations", "adaptation", "reviewed_weight", "folds", "full_every"))
    assert start_policy(argparse.Namespace(**none, loop_base_chars=None)).loop_base_chars == 400_000
    assert start_policy(argparse.Namespace(**none, loop_base_chars=0)).loop_base_chars is None
    assert start_policy(argparse.Namespace(**none, loop_base_chars=5000)).loop_base_chars == 5000


def test_simulate_scores_the_curve_at_the_project_bias(start_model_dir, corpora, monkeypatch) -> None:  # noqa: ANN001
    """``bias`` scores every curve point at that bias (a number, or the start model's recall
    bias), and the registry compares at it, as the app does with the project's bias."""
    from deid_core.engine.model import DeidModel
    from deid_core.errors import ModelError
    from deid_core.learning import retrain as retrain_module
    from deid_core.learning.registry import RetrainPolicy
    from deid_core.learning.simulate import simulate_from_model

    seen: list[float] = []
    real = retrain_module.retrain_round

    def spy(reviewed, **kwargs):  # noqa: ANN001, ANN003, ANN202
        seen.append(kwargs["bias"])
        return real(reviewed, **kwargs)

    monkeypatch.setattr(retrain_module, "retrain_round", spy)
    pool, test = corpora
    start = DeidModel.load(start_model_dir)
    policy = RetrainPolicy(**START_POLICY)
    runs = {b: simulate_from_model(start, pool[:8], test[:4], strategies=["random"], batch=4, budget=8,
                                   policy=policy, full_pool=False, bias=b)
            for b in (0.0, -3.0)}
    at0, low = (runs[b]["strategies"]["random"]["curve"] for b in (0.0, -3.0))
    assert runs[-3.0]["settings"]["bias"] == -3.0
    assert seen == [0.0, 0.0, -3.0, -3.0]
    assert low[0]["char_recall"] >= at0[0]["char_recall"]
    assert low[0]["char_precision"] != at0[0]["char_precision"]
    with pytest.raises(ModelError, match="recall bias"):
        simulate_from_model(start, pool[:8], test[:4], strategies=["random"], batch=4, budget=4,
                            policy=policy, full_pool=False, bias="recall")
    # "recall" follows each active model's own recall bias: the round compares at "recall" and
    # each curve point says which bias its model was scored at.
    from deid_core.engine.recall_bias import RECALL_BIAS_KEY

    start.metadata[RECALL_BIAS_KEY] = -2.0
    seen.clear()
    follow = simulate_from_model(start, pool[:8], test[:4], strategies=["random"], batch=4, budget=8,
                                 policy=policy, full_pool=False, bias="recall")
    curve = follow["strategies"]["random"]["curve"]
    assert seen == ["recall", "recall"]
    assert follow["settings"]["bias"] == "recall" and follow["settings"]["start_bias"] == -2.0
    from deid_core.learning.simulate import _evaluate

    assert curve[0]["bias"] == -2.0
    assert curve[0]["char_recall"] == _evaluate(start, test[:4], -2.0)["char_recall"]
    assert all(isinstance(p["bias"], float) for p in curve)


def test_simulate_default_bias_is_a_new_projects(start_model_dir, corpora) -> None:  # noqa: ANN001
    """Without ``bias`` the curve is scored where a new project from the start model tags in the
    app: its recorded recall bias (followed) if it records one, else 0."""
    from deid_core.engine.model import DeidModel
    from deid_core.engine.recall_bias import RECALL_BIAS_KEY
    from deid_core.learning.registry import RetrainPolicy
    from deid_core.learning.simulate import new_project_bias, simulate_from_model

    pool, test = corpora
    start = DeidModel.load(start_model_dir)
    policy = RetrainPolicy(**START_POLICY)

    def run() -> dict:
        return simulate_from_model(start, pool[:4], test[:3], strategies=["random"], batch=4, budget=4,
                                   policy=policy, full_pool=False)

    assert RECALL_BIAS_KEY not in start.metadata and new_project_bias(start) == 0.0
    plain = run()
    assert plain["settings"]["bias"] == 0.0 and plain["settings"]["start_bias"] == 0.0
    start.metadata[RECALL_BIAS_KEY] = -2.5
    assert new_project_bias(start) == "recall"
    follow = run()
    assert follow["settings"]["bias"] == "recall" and follow["settings"]["start_bias"] == -2.5
    first = follow["strategies"]["random"]["curve"][0]
    assert first["bias"] == -2.5 and first["char_recall"] >= plain["strategies"]["random"]["curve"][0]["char_recall"]


def test_cli_simulate_bias_needs_a_start_model(corpora, tmp_path, capsys) -> None:  # noqa: ANN001
    pool, test = corpora
    write_jsonl(tmp_path / "p.jsonl", pool[:4])
    write_jsonl(tmp_path / "t.jsonl", test[:2])
    with pytest.raises(SystemExit, match="needs --start-model"):
        main(["simulate", "--pool", str(tmp_path / "p.jsonl"), "--test", str(tmp_path / "t.jsonl"),
              "--bias", "-1"])
    with pytest.raises(SystemExit, match="bias must be a number"):
        main(["simulate", "--pool", str(tmp_path / "p.jsonl"), "--test", str(tmp_path / "t.jsonl"),
              "--bias", "lots"])
