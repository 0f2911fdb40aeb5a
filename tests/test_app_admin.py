"""Admin pages: bias slider and "use for this project", retrain/activate, users, import, export."""

from __future__ import annotations

from pathlib import Path

import pytest
from app_support import PROJECT, app_as, save_settings, seed_store, texts

from deid_core.engine.model import TrainConfig, train_model
from deid_core.schemes import load_scheme
from deid_core.store import repository as repo
from deid_core.store.audit import list_events
from deid_core.store.users import authenticate, get_user
from deid_core.synthetic import generate_notes
from deid_core.ui import learning
from deid_core.ui.jobs import get_job, wait


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    docs = generate_notes(12, seed=5)
    model = train_model(docs, lang="en", scheme=load_scheme("i2b2_2014"),
                        config=TrainConfig(max_iterations=10))
    return model.save(tmp_path_factory.mktemp("models") / model.version), model.version


@pytest.fixture
def engine(tmp_path, monkeypatch, model_dir):
    url = f"sqlite:///{tmp_path / 'app.db'}"
    engine = seed_store(url, n_notes=4, n_gold=4)
    path, version = model_dir
    repo.register_model_version(engine, PROJECT, version=version, artifact_path=str(path),
                                n_train_docs=20, activate=True)
    monkeypatch.setenv("DEID_DATABASE_URL", url)
    monkeypatch.setenv("DEID_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("DEID_MODEL_DIR", str(tmp_path / "models"))
    monkeypatch.setattr(learning, "APP_MAX_ITERATIONS", 10)
    return engine


def metric(at, label):
    return next(m.value for m in at.metric if m.label == label)


def test_bias_slider_changes_measures_and_use_for_project(engine):
    at = app_as("ada", "admin", page="bias")
    assert not at.exception and texts(at.title) == ["O-label bias"]
    recall_0 = float(metric(at, "Char recall"))
    spans_0 = int(metric(at, "Predicted spans"))
    at.slider(key="bias_slider").set_value(-5.0).run()
    assert not at.exception
    assert int(metric(at, "Predicted spans")) >= spans_0
    assert float(metric(at, "Char recall")) >= recall_0
    at.button(key="use_bias").click().run()
    assert repo.get_project(engine, PROJECT).settings["bias"] == -5.0
    events = list_events(engine, action="project.settings")
    assert events and events[0].actor == "ada" and events[0].after["bias"] == -5.0
    project_id = repo.get_project(engine, PROJECT).id
    job = wait(get_job(f"predict:{project_id}"), timeout=60)
    assert job.status == "done" and job.result == 4
    doc = repo.get_document(engine, repo.review_queue(engine, PROJECT, limit=1)[0].doc_id)
    assert doc.prediction.bias == -5.0


def test_retrain_then_roll_back(engine):
    repo.update_project_settings(engine, PROJECT, {"folds": 2})  # keep the k-fold check quick
    at = app_as("ada", "admin", page="model")
    assert not at.exception and texts(at.title) == ["Model"]
    first = repo.active_model_version(engine, PROJECT).version
    at.button(key="retrain").click().run()
    job = wait(get_job(f"model:{repo.get_project(engine, PROJECT).id}"), timeout=300)
    assert job.status == "done", job.error
    versions = repo.list_model_versions(engine, PROJECT)
    assert len(versions) == 2
    new = versions[-1]
    assert new.parent_version == first and "evaluation" in new.metrics
    assert any(e.action == "model.retrain" for e in list_events(engine, entity_type="model_version"))
    at.run()
    assert not at.exception
    if new.active:  # accepted: roll back to the starter model
        at.button(key="rollback").click().run()
        wait(get_job(f"model:{repo.get_project(engine, PROJECT).id}"), timeout=60)
        assert repo.active_model_version(engine, PROJECT).version == first
    else:  # rejected with a reason, kept as a candidate
        assert new.metrics["evaluation"]["reason"].startswith("rejected")


def test_model_page_saves_the_retraining_policy(engine):
    at = app_as("ada", "admin", page="model")
    assert not at.exception
    settings = save_settings(at, engine, {"retrain_every": 7, "full_every": 0}, "save_policy")
    assert (settings["retrain_every"], settings["full_every"]) == (7, 0)
    at.run()  # the caption above the form shows the saved policy from the next run on
    assert "with L-BFGS every" not in " ".join(texts(at.caption))
    at.number_input(key="full_every").set_value(50)
    at.button(key="save_policy").click().run()
    at.run()
    assert "with L-BFGS every 50" in " ".join(texts(at.caption))


def test_users_page_creates_and_deactivates(engine):
    at = app_as("ada", "admin", page="users")
    at.text_input(key="new_username").input("nina")
    at.text_input(key="new_password").input("a long password")
    at.selectbox(key="new_role").select("reviewer")
    at.button[0].click().run()
    assert not at.exception and get_user(engine, "nina").role == "reviewer"
    assert authenticate(engine, "nina", "a long password") is not None
    at.run()
    at.selectbox(key="edit_user").select("nina").run()
    at.button(key="deactivate").click().run()
    assert get_user(engine, "nina").active is False
    assert authenticate(engine, "nina", "a long password") is None


def test_a_reviewers_save_retrains_as_the_policy_not_as_the_reviewer(engine):
    """Registering a model needs an admin; the round a reviewer's save triggers must still land."""
    from deid_core.ui.learning import maybe_retrain

    before = {v.version for v in repo.list_model_versions(engine, PROJECT)}
    repo.update_project_settings(engine, PROJECT, {"retrain_every": 4, "loop_iterations": 5})
    assert maybe_retrain(engine, PROJECT, "rita") is True  # rita is a reviewer
    job = wait(get_job(f"model:{repo.get_project(engine, PROJECT).id}"), timeout=300)
    assert job.status == "done", job.error
    (new,) = {v.version for v in repo.list_model_versions(engine, PROJECT)} - before
    (event,) = list_events(engine, action="model.retrain")
    assert event.actor == "retrain policy (after a save by rita)"
    assert new


def test_import_page_creates_a_project(engine):
    at = app_as("ada", "admin", page="import")
    assert not at.exception
    at.text_input(key="new_project").input("second")
    at.selectbox(key="new_project_lang").select("es")
    at.selectbox(key="new_project_scheme").select("meddocan")
    at.button[0].click().run()
    info = repo.get_project(engine, "second")
    assert info.lang == "es" and info.scheme == "meddocan"


def test_export_page_writes_a_checked_corpus(engine, tmp_path):
    at = app_as("ada", "admin", page="export")
    at.radio(key="exp_mode").set_value("tag")
    at.multiselect(key="exp_formats").set_value(["jsonl"])
    at.button(key="exp_go").click().run()
    assert not at.exception and not at.error, texts(at.error)
    assert any("Exported 4 notes" in s and "0 leak(s)" in s for s in texts(at.success))
    (folder,) = (Path(tmp_path) / "data" / "exports").iterdir()
    assert (folder / "manifest.json").is_file() and (folder / "corpus.jsonl").is_file()
    assert (Path(tmp_path) / "data" / "secrets").is_dir()


def test_policy_triggers_retraining_after_enough_reviews(engine, monkeypatch):
    from deid_core.learning.registry import retrain_due
    from deid_core.ui.learning import maybe_retrain

    calls = []  # the retrain itself is covered above; here only the trigger
    monkeypatch.setattr(learning, "retrain_project",
                        lambda engine, project, actor, full=False, progress=None: calls.append((project, full)) or {})
    # The 4 imported gold notes count as reviewed since the starter model.
    repo.update_project_settings(engine, PROJECT, {"retrain_every": 5})
    assert retrain_due(engine, PROJECT) is False
    assert maybe_retrain(engine, PROJECT, "ada") is False
    repo.update_project_settings(engine, PROJECT, {"retrain_every": 4})
    assert retrain_due(engine, PROJECT) is True
    assert maybe_retrain(engine, PROJECT, "ada") is True
    job = wait(get_job(f"model:{repo.get_project(engine, PROJECT).id}"), timeout=30)
    assert job.status == "done" and calls == [(PROJECT, False)]
    # Once full_every notes were reviewed since the last L-BFGS model, the round is a full one.
    repo.update_project_settings(engine, PROJECT, {"full_every": 4})
    repo.register_model_version(engine, PROJECT, version="fast-1", artifact_path="/nowhere",
                                metrics={"n_reviewed": 0, "train_config": {"algorithm": "pa"}})
    assert maybe_retrain(engine, PROJECT, "ada") is True
    job = wait(get_job(f"model:{repo.get_project(engine, PROJECT).id}"), timeout=30)
    assert job.status == "done" and job.label == "Automatic full retraining (L-BFGS)"
    assert calls == [(PROJECT, False), (PROJECT, True)]
