"""App: a new English project starts from the starter model; the Bias page offers its recall bias."""

from __future__ import annotations

from app_support import PROJECT, app_as, seed_store, texts

from deid_core.engine.model import DeidModel
from deid_core.engine.recall_bias import RECALL_BIAS_KEY
from deid_core.store import repository as repo
from deid_core.store.audit import list_events
from deid_core.synthetic.starter import ensure_starter
from deid_core.ui.bias import BIAS_MAX, BIAS_MIN, model_recall_bias
from deid_core.ui.jobs import get_job, wait


def _engine(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'app.db'}"
    engine = seed_store(url, n_notes=4, n_gold=4)
    monkeypatch.setenv("DEID_DATABASE_URL", url)
    monkeypatch.setenv("DEID_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("DEID_MODEL_DIR", str(tmp_path / "models"))
    return engine


def test_a_new_english_project_starts_from_the_starter(tmp_path, monkeypatch):
    engine = _engine(tmp_path, monkeypatch)
    at = app_as("ada", "admin", page="import")
    at.text_input(key="new_project").input("ward")
    at.selectbox(key="new_project_lang").select("en")
    at.selectbox(key="new_project_scheme").select("i2b2_2014")
    at.button[0].click().run()
    assert not at.exception
    job = get_job("starter:ward")
    assert job is not None
    wait(job, timeout=600)
    assert job.snapshot()["status"] == "done", job.snapshot()
    starter = DeidModel.load(ensure_starter("en"))
    active = repo.active_model_version(engine, "ward")
    assert active is not None and active.version == starter.version
    assert active.artifact_path.startswith(str(tmp_path / "models"))
    # recall first: the new project starts at the starter's recall bias
    assert repo.get_project(engine, "ward").settings["bias"] == model_recall_bias(starter)


def test_bias_page_offers_the_models_recall_bias(tmp_path, monkeypatch):
    engine = _engine(tmp_path, monkeypatch)
    path = ensure_starter("en")
    model = DeidModel.load(path)
    repo.register_model_version(engine, PROJECT, version=model.version, artifact_path=str(path),
                                n_train_docs=1, activate=True)
    at = app_as("ada", "admin", page="bias")
    assert not at.exception
    recall_bias = model_recall_bias(model)  # the recorded value on the slider's grid and range
    assert recall_bias == min(BIAS_MAX, max(BIAS_MIN, round(model.metadata[RECALL_BIAS_KEY] * 4) / 4))
    assert any("records a recall bias" in c for c in texts(at.caption))
    assert not any("uses it now" in c for c in texts(at.caption))
    at.button(key="use_recall_bias").click().run()
    assert not at.exception
    assert float(repo.get_project(engine, PROJECT).settings["bias"]) == recall_bias
    assert any("uses it now" in c for c in texts(at.caption))
    assert at.button(key="use_recall_bias").disabled  # nothing left to apply
    job = get_job(f"predict:{repo.get_project(engine, PROJECT).id}")
    if job is not None:
        wait(job, timeout=120)


def test_a_project_at_its_models_recall_bias_follows_it_to_the_next_version(tmp_path, monkeypatch):
    from deid_core.ui.learning import follow_recall_bias, follows_recall_bias

    engine = _engine(tmp_path, monkeypatch)
    old = {RECALL_BIAS_KEY: -1.25}
    new = {RECALL_BIAS_KEY: -2.5}
    none: dict = {}
    repo.update_project_settings(engine, PROJECT, {"bias": -1.25})
    assert follows_recall_bias(-1.25, old) and not follows_recall_bias(-1.0, old)
    assert not follows_recall_bias(-1.25, none) and not follows_recall_bias(-1.25, None)
    # A bias the admin chose stays; so does one when the new version records none.
    assert follow_recall_bias(engine, PROJECT, -1.0, old, new, "ada") == -1.0
    assert follow_recall_bias(engine, PROJECT, -1.25, old, none, "ada") == -1.25
    assert repo.get_project(engine, PROJECT).settings["bias"] == -1.25
    # At the old model's recall bias: the project moves to the new one's, audited.
    assert follow_recall_bias(engine, PROJECT, -1.25, old, new, "ada") == -2.5
    assert repo.get_project(engine, PROJECT).settings["bias"] == -2.5
    events = list_events(engine, action="project.settings")
    assert events[0].actor == "ada" and events[0].after["bias"] == -2.5


def test_an_accepted_retrain_moves_a_project_at_the_recall_bias_to_the_new_models(tmp_path, monkeypatch):
    from deid_core.ui.learning import install_starter, retrain_project

    engine = _engine(tmp_path, monkeypatch)
    started = install_starter(engine, PROJECT, "ada")
    summary = retrain_project(engine, PROJECT, "ada")
    assert summary["accepted"], summary
    active = DeidModel.load(repo.active_model_version(engine, PROJECT).artifact_path)
    assert active.version == summary["version"] != started["version"]
    info = active.metadata["recall_bias_info"]
    assert info["dev_corpus"] == DeidModel.load(ensure_starter("en")).metadata["recall_bias_info"]["dev_corpus"]
    assert summary["bias"] == model_recall_bias(active) == repo.get_project(engine, PROJECT).settings["bias"]
    assert summary.get("bias_before", summary["bias"]) == started["bias"]
    version = repo.active_model_version(engine, PROJECT)
    assert version.metrics["compared_at_bias"] == "recall"
