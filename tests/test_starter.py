"""The bundled starter model: found with no --model, its recall bias applied with --bias recall.

The tests build the real starter code path with ``DEID_STARTER_SIZE=tiny`` (a
few dozen notes, a few L-BFGS iterations) in a temporary cache directory
(``DEID_STARTER_DIR``); users get the default size.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from people import add_users

from deid_core.cli import main
from deid_core.corpus import read_jsonl, write_jsonl
from deid_core.engine.model import DeidModel, TrainConfig, train_model
from deid_core.engine.recall_bias import (
    RECALL_BIAS_KEY,
    parse_bias,
    resolve_bias,
)
from deid_core.errors import ModelError, UnsupportedFormat
from deid_core.evaluation.visible_chars import visible_char_prf
from deid_core.spans import Document, Span
from deid_core.synthetic import generate_notes
from deid_core.synthetic import starter as starter_mod


@pytest.fixture(scope="module")
def starter_env(tmp_path_factory):
    cache = tmp_path_factory.mktemp("starter-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DEID_STARTER_DIR", str(cache))
        mp.setenv("DEID_STARTER_SIZE", "tiny")
        path = starter_mod.ensure_starter("en")
        yield {"cache": cache, "path": path, "model": DeidModel.load(path)}


@pytest.fixture(scope="module")
def notes_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("notes") / "notes.jsonl"
    write_jsonl(path, generate_notes(4, seed=77))
    return path


def test_starter_is_cached_under_the_user_cache_dir_and_reused(starter_env):
    path = starter_env["path"]
    assert path.parent == starter_env["cache"]
    assert path == starter_mod.starter_dir("en") and starter_mod.is_built("en")
    assert path.name.startswith("en-") and path.name.endswith("-tiny")
    before = (path / "model.crfsuite").stat().st_mtime_ns if (path / "model.crfsuite").exists() else None
    again = starter_mod.ensure_starter("en")  # cached: not rebuilt
    assert again == path
    if before is not None:
        assert (path / "model.crfsuite").stat().st_mtime_ns == before


def test_starter_records_recall_bias_and_a_reproducible_corpus(starter_env):
    meta = starter_env["model"].metadata
    info = meta["recall_bias_info"]
    assert isinstance(meta[RECALL_BIAS_KEY], float) and meta[RECALL_BIAS_KEY] <= 0
    assert info["bias"] == meta[RECALL_BIAS_KEY]
    if info["reached"]:
        assert info["at_recall_bias"]["recall"] >= info["target"] == 0.97
    corpus = meta["corpus"]
    assert set(corpus) == {"kind", "lang", "n", "seed", "options"}
    assert corpus["kind"] == "synthetic" and corpus["lang"] == "en"
    docs = generate_notes(corpus["n"], seed=corpus["seed"], **corpus["options"])
    assert len(docs) == meta["documents"]
    assert sum(len(d.spans) for d in docs) == meta["spans"]
    assert corpus["options"]["families"] == "train"
    assert info["dev_corpus"]["options"]["families"] == "dev"
    json.dumps(meta)  # training.json stays plain JSON


def test_a_name_the_rules_found_is_propagated_in_the_note(starter_env):
    """The starter seeds propagation from rule names (score 0.7): the relative named after
    "sister" is also masked where the note names her again without a cue."""
    model = starter_env["model"]
    assert model.config.propagate_min_score == starter_mod.recipe("en").propagate_min_score == 0.7
    text = "hcp is sister phyllis (lives in nh).\ndr tran updated phyllis at 2100.\n"
    spans = model.predict(Document("d1", text, (), {}), 0.0).spans
    second = text.rindex("phyllis")
    hit = [s for s in spans if s.start == second and s.end == second + len("phyllis")]
    assert hit and hit[0].label == "PATIENT"
    assert any(s.start == text.index("phyllis") and s.source == "rule:kin_name" for s in spans)


def test_predict_without_model_uses_the_starter(starter_env, notes_file, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("DEID_STARTER_DIR", str(starter_env["cache"]))
    monkeypatch.setenv("DEID_STARTER_SIZE", "tiny")
    out = tmp_path / "pred.jsonl"
    assert main(["predict", "--input", str(notes_file), "--output", str(out)]) == 0
    version = starter_env["model"].version
    assert f"model {version}, bias 0)" in capsys.readouterr().out
    preds = read_jsonl(out, allow_overlap=True)
    assert {d.meta["model_version"] for d in preds} == {version}


def test_bias_recall_applies_the_recorded_bias(starter_env, notes_file, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("DEID_STARTER_DIR", str(starter_env["cache"]))
    monkeypatch.setenv("DEID_STARTER_SIZE", "tiny")
    recall_bias = starter_env["model"].metadata[RECALL_BIAS_KEY]
    out0, out1 = tmp_path / "p0.jsonl", tmp_path / "p1.jsonl"
    assert main(["predict", "--input", str(notes_file), "--output", str(out0)]) == 0
    assert main(["predict", "--input", str(notes_file), "--output", str(out1), "--bias", "recall"]) == 0
    assert f"bias {recall_bias:g})" in capsys.readouterr().out
    p0, p1 = read_jsonl(out0, allow_overlap=True), read_jsonl(out1, allow_overlap=True)
    assert {d.meta["bias"] for d in p1} == {recall_bias}
    gold = generate_notes(4, seed=77)
    r0 = visible_char_prf(gold, p0)["recall"]
    r1 = visible_char_prf(gold, p1)["recall"]
    assert r1 >= r0 and sum(len(d.spans) for d in p1) >= sum(len(d.spans) for d in p0)


def test_deidentify_and_bias_sweep_use_the_starter(starter_env, notes_file, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("DEID_STARTER_DIR", str(starter_env["cache"]))
    monkeypatch.setenv("DEID_STARTER_SIZE", "tiny")
    out = tmp_path / "deid.jsonl"
    rc = main(["deidentify", "--input", str(notes_file), "--output", str(out), "--bias", "recall",
               "--mode", "tag", "--allow-leaks"])
    assert rc == 0
    recall_bias = starter_env["model"].metadata[RECALL_BIAS_KEY]
    summary = json.loads(capsys.readouterr().out.split("\n}\n", 1)[0] + "\n}")
    assert summary["model"] == starter_env["model"].version and summary["bias"] == recall_bias
    rc = main(["bias-sweep", "--gold", str(notes_file), "--from", "-1", "--to", "0", "--step", "1", "--json"])
    assert rc == 0
    result = json.loads(capsys.readouterr().out)
    assert result["model_version"] == starter_env["model"].version
    assert result["recorded_recall_bias"] == recall_bias


def test_bias_recall_without_a_recorded_value_is_a_clear_error(notes_file, tmp_path, capsys):
    docs = generate_notes(6, seed=3)
    model = train_model(docs, lang="en", config=TrainConfig(max_iterations=3))
    path = model.save(tmp_path / "plain")
    rc = main(["predict", "--model", str(path), "--input", str(notes_file), "--output",
               str(tmp_path / "x.jsonl"), "--bias", "recall"])
    assert rc == 1
    assert "records no recall bias" in capsys.readouterr().err
    assert not (tmp_path / "x.jsonl").exists()


def test_bias_argument_parsing(capsys):
    assert parse_bias("recall") == "recall" and parse_bias(" Recall ") == "recall"
    assert parse_bias("-1.5") == -1.5
    with pytest.raises(ValueError, match="number or 'recall'"):
        parse_bias("high")
    assert resolve_bias("recall", {RECALL_BIAS_KEY: -2.0}, "m") == -2.0
    assert resolve_bias(0.5, {}, "m") == 0.5
    with pytest.raises(ModelError, match="records no recall bias"):
        resolve_bias("recall", {}, "model m")
    with pytest.raises(SystemExit):
        main(["predict", "--input", "x", "--output", "y", "--bias", "high"])
    assert "number or 'recall'" in capsys.readouterr().err


def test_cache_key_follows_recipe_version_and_size(monkeypatch, tmp_path):
    monkeypatch.setenv("DEID_STARTER_DIR", str(tmp_path))
    monkeypatch.delenv("DEID_STARTER_SIZE", raising=False)
    starter_mod.starter_key.cache_clear()
    base = starter_mod.starter_dir("en")
    monkeypatch.setenv("DEID_STARTER_SIZE", "tiny")
    assert starter_mod.starter_dir("en") != base
    monkeypatch.delenv("DEID_STARTER_SIZE")
    import deid_core

    monkeypatch.setattr(deid_core, "__version__", "999.0")
    starter_mod.starter_key.cache_clear()
    assert starter_mod.starter_dir("en") != base
    monkeypatch.undo()
    starter_mod.starter_key.cache_clear()


def test_cache_key_follows_the_built_in_data(monkeypatch, tmp_path):
    starter_mod.starter_key.cache_clear()
    key = starter_mod.starter_key("en", "default")
    real = starter_mod._hashed_files()
    rules = next(p for p in real if p.parts[-2:] == ("rules", "en.yaml"))
    edited = tmp_path / "en.yaml"
    edited.write_text(rules.read_text("utf-8") + "\n# edited\n", "utf-8")
    monkeypatch.setattr(starter_mod, "_hashed_files", lambda: [edited if p == rules else p for p in real])
    monkeypatch.setattr(starter_mod, "_package_root", lambda: Path("/"))
    starter_mod.starter_key.cache_clear()
    assert starter_mod.starter_key("en", "default") != key
    monkeypatch.undo()
    starter_mod.starter_key.cache_clear()


def test_no_starter_for_spanish_is_a_clear_error():
    with pytest.raises(UnsupportedFormat, match="no starter model for language 'es'"):
        starter_mod.starter_dir("es")


def test_nonspace_char_measure():
    gold = [Document("a", "Mary  Smith came", (Span(0, 11, "PATIENT"),))]
    pred = [Document("a", "Mary  Smith came", (Span(0, 4, "PATIENT"), Span(12, 16, "PATIENT")))]
    m = visible_char_prf(gold, pred)
    assert m["gold_chars"] == 9 and m["overlap_chars"] == 4 and m["pred_chars"] == 8
    assert m["recall"] == pytest.approx(4 / 9) and m["precision"] == 0.5


def test_a_new_project_starts_from_the_starter(starter_env, tmp_path, monkeypatch):
    from deid_core.store import repository as repo
    from deid_core.store.engine import open_store
    from deid_core.ui.learning import install_starter, predict_with_active, starter_applies

    monkeypatch.setenv("DEID_STARTER_DIR", str(starter_env["cache"]))
    monkeypatch.setenv("DEID_STARTER_SIZE", "tiny")
    monkeypatch.setenv("DEID_MODEL_DIR", str(tmp_path / "models"))
    engine = open_store(f"sqlite:///{tmp_path / 'p.db'}")
    add_users(engine, admins=("admin",))
    assert starter_applies("en", "i2b2_2014")
    assert not starter_applies("en", "presidio_synth") and not starter_applies("es", "meddocan")
    repo.create_project(engine, "ward", lang="en", scheme="i2b2_2014", actor="admin")
    docs = [d.with_spans(()) for d in generate_notes(3, seed=5)]
    repo.import_documents(engine, "ward", docs, annotations="none", fmt="jsonl", source="t", actor="admin")
    seen = []
    summary = install_starter(engine, "ward", "admin", progress=lambda m, f: seen.append(f))
    assert summary["predicted"] == 3 and seen[-1] == 1.0
    active = repo.active_model_version(engine, "ward")
    assert active.version == starter_env["model"].version == summary["version"]
    # a copy in the project's model directory, not the (replaceable) starter cache
    assert Path(active.artifact_path).parent == tmp_path / "models" / "ward"
    assert DeidModel.load(active.artifact_path).metadata[RECALL_BIAS_KEY] == starter_env["model"].metadata[
        RECALL_BIAS_KEY]
    # recall first: the project takes the starter's recall bias, and the queue is tagged at it
    from deid_core.store.audit import list_events
    from deid_core.ui.bias import model_recall_bias

    recall_bias = model_recall_bias(starter_env["model"])
    assert summary["bias"] == recall_bias == repo.get_project(engine, "ward").settings["bias"]
    assert {repo.get_document(engine, i).prediction.bias for i, _ in repo.unreviewed_documents(engine, "ward")} \
        == {recall_bias}
    events = list_events(engine, action="project.settings")
    assert [(e.actor, e.after["bias"]) for e in events] == ([("admin", recall_bias)] if recall_bias else [])
    with pytest.raises(Exception, match="already has an active model"):
        install_starter(engine, "ward", "admin")
    assert predict_with_active(engine, "ward", "admin") == 3


def test_app_bias_offers_the_recorded_recall_bias(starter_env):
    from deid_core.ui.bias import BIAS_MAX, BIAS_MIN, model_recall_bias

    class M:
        metadata: dict = {}

    assert model_recall_bias(M()) is None
    M.metadata = {RECALL_BIAS_KEY: -9.0}
    assert model_recall_bias(M()) == BIAS_MIN  # clamped to the slider
    recorded = round(starter_env["model"].metadata[RECALL_BIAS_KEY] * 4) / 4
    assert model_recall_bias(starter_env["model"]) == min(BIAS_MAX, max(BIAS_MIN, recorded))


def test_predict_queue_bias_recall_uses_the_active_models_value(starter_env, tmp_path, monkeypatch, capsys):
    from deid_core.store import repository as repo
    from deid_core.store.engine import open_store
    from deid_core.ui.learning import install_starter

    monkeypatch.setenv("DEID_STARTER_DIR", str(starter_env["cache"]))
    monkeypatch.setenv("DEID_STARTER_SIZE", "tiny")
    monkeypatch.setenv("DEID_MODEL_DIR", str(tmp_path / "models"))
    url = f"sqlite:///{tmp_path / 'q.db'}"
    engine = open_store(url)
    add_users(engine, admins=("admin",))
    repo.create_project(engine, "q", lang="en", scheme="i2b2_2014", actor="admin")
    repo.create_project(engine, "empty", lang="en", scheme="i2b2_2014", actor="admin")
    docs = [d.with_spans(()) for d in generate_notes(2, seed=8)]
    repo.import_documents(engine, "q", docs, annotations="none", fmt="jsonl", source="t", actor="admin")
    install_starter(engine, "q", "admin")
    recall_bias = starter_env["model"].metadata[RECALL_BIAS_KEY]
    assert main(["predict-queue", "--project", "q", "--bias", "recall", "--redo", "--quiet", "--db", url]) == 0
    assert f"at bias {recall_bias:g}" in capsys.readouterr().out
    assert main(["predict-queue", "--project", "empty", "--bias", "recall", "--quiet", "--db", url]) == 1
    assert "no active model" in capsys.readouterr().err


def test_cli_project_create_with_starter(starter_env, tmp_path, monkeypatch, capsys):
    from deid_core.store import repository as repo
    from deid_core.store.engine import open_store

    monkeypatch.setenv("DEID_STARTER_DIR", str(starter_env["cache"]))
    monkeypatch.setenv("DEID_STARTER_SIZE", "tiny")
    monkeypatch.setenv("DEID_MODEL_DIR", str(tmp_path / "models"))
    url = f"sqlite:///{tmp_path / 'c.db'}"
    assert main(["project", "create", "ward", "--starter", "--db", url]) == 0
    assert f"starter {starter_env['model'].version}" in capsys.readouterr().out
    assert repo.active_model_version(open_store(url), "ward").version == starter_env["model"].version
    from deid_core.ui.bias import model_recall_bias

    assert repo.get_project(open_store(url), "ward").settings["bias"] == model_recall_bias(starter_env["model"])
    # an explicit --bias is kept
    assert main(["project", "create", "ward2", "--starter", "--bias", "0.5", "--db", url]) == 0
    assert "O-label bias 0.5" in capsys.readouterr().out
    assert repo.get_project(open_store(url), "ward2").settings["bias"] == 0.5
    assert main(["project", "create", "es", "--lang", "es", "--scheme", "meddocan", "--starter", "--db", url]) == 1
    assert "no starter model" in capsys.readouterr().err
    assert [p.name for p in repo.list_projects(open_store(url))] == ["ward", "ward2"]


def test_a_second_caller_waits_for_a_build_in_progress_instead_of_building_again(tmp_path, monkeypatch):
    """Two processes starting together (the app and a CLI run) train the starter once."""
    import threading

    monkeypatch.setenv("DEID_STARTER_DIR", str(tmp_path))
    monkeypatch.setenv("DEID_STARTER_SIZE", "tiny")
    target = starter_mod.starter_dir("en")
    builds: list[str] = []
    monkeypatch.setattr(starter_mod, "build_starter", lambda lang, progress=None: builds.append(lang))
    messages: list[str] = []
    waiting = threading.Event()

    def on_progress(message: str, fraction: float) -> None:
        messages.append(message)
        waiting.set()

    result: list[Path] = []
    with starter_mod._build_lock(target, lambda: None):  # "the other process" holds the build
        waiter = threading.Thread(target=lambda: result.append(starter_mod.ensure_starter("en", progress=on_progress)))
        waiter.start()
        assert waiting.wait(30), "the second caller never reported that it waits"
        target.mkdir(parents=True)
        (target / starter_mod.MANIFEST).write_text("{}")  # the other build finishes
    waiter.join(30)
    assert result == [target]
    assert builds == []  # it used the finished build rather than training its own
    assert any("waiting" in m for m in messages)


def test_another_seed_builds_another_starter_that_is_not_the_cached_one(starter_env, monkeypatch):
    """Session 20 judged a generator change over three seeds: the same recipe trained on other notes."""
    monkeypatch.setenv("DEID_STARTER_SIZE", "tiny")
    monkeypatch.setenv("DEID_STARTER_DIR", str(starter_env["cache"]))
    default_seed = starter_mod.recipe("en").seed
    other = starter_mod.build_starter("en", seed=default_seed + 1)
    cached = starter_env["model"].metadata
    assert other.metadata["corpus"]["seed"] == default_seed + 1 == cached["corpus"]["seed"] + 1
    assert other.metadata["starter"]["key"] is None and cached["starter"]["key"]
    corpus = other.metadata["corpus"]
    docs = generate_notes(corpus["n"], seed=corpus["seed"], **corpus["options"])
    assert sum(len(d.spans) for d in docs) == other.metadata["spans"]
    usual = generate_notes(corpus["n"], seed=default_seed, **corpus["options"])
    assert [d.text for d in docs] != [d.text for d in usual]
