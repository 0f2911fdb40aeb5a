"""The Model page's rule table: reviewer decisions per rule, demote and undo (issue 13 part 4)."""

from __future__ import annotations

import pytest
from app_support import PROJECT, app_as, save_settings, texts
from rule_feedback_support import seed

from deid_core.store import repository as repo
from deid_core.store.audit import list_events
from deid_core.ui.jobs import get_job, wait


@pytest.fixture
def engine(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'app.db'}"
    engine = seed(url)
    monkeypatch.setenv("DEID_DATABASE_URL", url)
    monkeypatch.setenv("DEID_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("DEID_MODEL_DIR", str(tmp_path / "models"))
    return engine


def rule_frame(at):  # type: ignore[no-untyped-def]
    (frame,) = [d.value for d in at.dataframe if "kept" in d.value.columns]
    return frame.set_index("rule")


def test_model_page_rule_table_demote_and_undo(engine) -> None:  # type: ignore[no-untyped-def]
    at = app_as("ada", "admin", page="model")
    assert not at.exception
    assert "Rules" in texts(at.subheader)
    frame = rule_frame(at)
    phone = frame.loc["phone_dashed"]
    assert (phone["status"], phone["deleted"], phone["kept"], phone["precision"]) == (
        "below threshold", 22, 0, 0.0)
    assert frame.loc["date_mdy_slash", "status"] == "standalone"
    assert frame.loc["date_mdy_slash", "kept"] == 11
    job_name = f"model:{repo.get_project(engine, PROJECT).id}"

    at.button(key="rule_check").click().run()  # apply the threshold now
    job = wait(get_job(job_name), timeout=120)
    assert job.status == "done", job.error
    assert job.result == {"demoted": ["phone_dashed"], "repredicted": 1}
    assert repo.get_project(engine, PROJECT).settings["demoted_rules"] == ["phone_dashed"]
    at.run()
    assert not at.exception
    assert "Rules: demoted phone_dashed to feature-only; 1 unreviewed notes re-predicted." in texts(at.success)
    assert rule_frame(at).loc["phone_dashed", "status"] == "demoted"
    assert at.selectbox(key="rule_pick").value == "phone_dashed"  # demoted rules come first
    history = [d.value for d in at.dataframe if "change" in d.value.columns]
    assert history and history[0][["change", "rule", "automatic"]].values.tolist() == [
        ["demoted", "phone_dashed", True]]

    at.button(key="rule_restore").click().run()  # undo
    job = wait(get_job(job_name), timeout=120)
    assert job.status == "done", job.error
    assert job.result == {"restored": ["phone_dashed"], "repredicted": 1}
    settings = repo.get_project(engine, PROJECT).settings
    assert settings["demoted_rules"] == [] and settings["restored_rules"] == ["phone_dashed"]
    assert [(e.action, e.actor) for e in list_events(engine, entity_type="rule")] == [
        ("rule.restore", "ada"), ("rule.demote", "ada")]
    at.run()
    assert not at.exception
    assert rule_frame(at).loc["phone_dashed", "status"] == "restored"


def test_rule_settings_are_saved(engine) -> None:  # type: ignore[no-untyped-def]
    at = app_as("ada", "admin", page="model")
    settings = save_settings(at, engine, {"rule_min_precision": 0.0, "rule_min_decisions": 5},
                             "save_rule_settings")
    assert (settings["rule_min_precision"], settings["rule_min_decisions"]) == (0.0, 5)
    at.run()
    # Precision 0 is never below 0: nothing is below the threshold any more.
    assert "below threshold" not in set(rule_frame(at)["status"])
