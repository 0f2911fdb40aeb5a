"""One test per defect found in the reviewer walkthrough (issue 15), through AppTest.

The browser-only ones (dark mode, Deploy button, uploader emptied) are in
``tests/browser/test_review_keyboard.py``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from app_support import PROJECT, app_as, seed_store

from deid_core.store import repository as repo
from deid_core.ui.importing import format_mismatch
from deid_core.ui.jobs import ended_unseen, start_job, wait
from deid_core.ui.queue import progress_frame


@pytest.fixture
def engine(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'app.db'}"
    engine = seed_store(url, n_notes=4, n_gold=2)
    monkeypatch.setenv("DEID_DATABASE_URL", url)
    monkeypatch.setenv("DEID_DATA_DIR", str(tmp_path / "data"))
    return engine


def vega_specs(at):
    return [json.loads(c.proto.spec) for c in at.get("vega_lite_chart")]


def test_review_legend_is_styled(engine):
    at = app_as("rita", page="queue")
    at.button(key="review_next").click().run()
    at.switch_page("pages/review.py").run()
    (legend,) = [h.proto.body for h in at.get("html") if "deid-legend" in h.proto.body]
    assert legend.startswith("<style>") and ".deid-swatch{" in legend and ".deid-legend kbd{" in legend
    assert "<kbd>1</kbd>" in legend and "background:#" in legend
    assert "possible miss" in legend  # what the hatched fill means


def test_queue_chart_shows_every_status_with_a_colour_legend(engine):
    at = app_as("rita", page="queue")
    (spec,) = vega_specs(at)
    layer = spec["layer"][0]
    enc = layer["encoding"]
    assert enc["color"]["legend"] is not None and enc["color"]["scale"]["domain"] == [
        "reviewed", "in_review", "new", "skipped"]
    assert spec["height"] == {"step": 28}  # one row per status, labels never dropped
    # every status is a row, zero counts included, so the legend and axis always match
    counts = repo.status_counts(engine, PROJECT)
    assert progress_frame(counts) == [{"status": "reviewed", "notes": 2}, {"status": "in_review", "notes": 0},
                                      {"status": "new", "notes": 4}, {"status": "skipped", "notes": 0}]
    assert spec["layer"][1]["mark"]["type"] == "text"  # the count is written on each bar


def test_queue_find_matches_a_note_id(engine):
    at = app_as("rita", page="queue")
    rows = repo.review_queue(engine, PROJECT, limit=10)
    wanted = rows[2].external_id
    at.text_input(key="queue_find").input(wanted[-3:].upper()).run()  # part of it, any case
    frame = at.dataframe[0].value
    assert list(frame["note"]) == [wanted]
    at.text_input(key="queue_find").input("no such note").run()
    assert not at.dataframe and "No notes match" in at.info[0].value


def test_empty_cells_are_empty_not_none(engine):
    at = app_as("rita", page="queue")
    assert at.dataframe[0].proto.placeholder == ""
    admin = app_as("ada", "admin", page="users")
    assert admin.dataframe[0].proto.placeholder == ""


def test_export_downloads_stay_after_a_rerun(engine, tmp_path):
    at = app_as("ada", "admin", page="export")
    at.radio(key="exp_mode").set_value("tag")
    at.multiselect(key="exp_formats").set_value(["jsonl"])
    at.button(key="exp_go").click().run()
    assert not at.exception and not at.error

    def downloads():
        return [b for b in at.get("download_button")]

    (button,) = downloads()
    assert Path(at.session_state["last_export"]["path"]).is_relative_to(tmp_path / "data")
    at.run()  # any later rerun (another widget, a click elsewhere) keeps the download
    (again,) = downloads()
    assert again.proto.label == button.proto.label
    # and clicking it does not rerun the page
    assert again.proto.ignore_rerun is True


def test_jsonl_imported_as_txt_is_refused_by_name():
    line = json.dumps({"id": "a", "text": "Pt seen.", "spans": []}).encode()
    assert "notes.jsonl" in format_mismatch("txt", [("notes.jsonl", line)])
    assert "pick the jsonl format" in format_mismatch("txt", [("notes.jsonl", line)])
    message = format_mismatch("txt", [("notes.data", line + b"\n" + line)])
    assert message and "notes.data, line 1" in message and "Pt seen" not in message
    assert format_mismatch("txt", [("note.txt", b"Pt seen by Dr. Ruiz.")]) is None
    assert format_mismatch("jsonl", [("notes.jsonl", line)]) is None
    assert "i2b2" in format_mismatch("jsonl", [("record.xml", b"<xml/>")])


def test_model_page_refreshes_when_a_background_job_ends():
    state: dict = {}
    job = start_job(f"test-ended-{time.time()}", "Retraining", lambda progress: {"ok": True})
    wait(job)
    assert ended_unseen(state, job) is True  # the polling fragment asks for a full rerun once
    assert ended_unseen(state, job) is False  # and the full run does not loop
    running = start_job(f"test-running-{time.time()}", "Retraining",
                        lambda progress: time.sleep(0.5))
    assert ended_unseen(state, running) is False
    wait(running)


def test_model_learning_curve_axis_shows_whole_numbers(engine):
    from deid_core.engine.model import TrainConfig, train_model
    from deid_core.schemes import load_scheme
    from deid_core.synthetic import generate_notes

    model = train_model(generate_notes(6, seed=5), lang="en", scheme=load_scheme("i2b2_2014"),
                        config=TrainConfig(max_iterations=3))
    path = model.save(Path(engine.url.database).parent / "m" / model.version)
    metrics = {"evaluation": {"candidate": {"strict_f1": 0.5, "char_recall": 0.7},
                              "decision": "activated", "reason": "first model",
                              "n_train_tokens": 1200}}
    repo.register_model_version(engine, PROJECT, version=model.version, artifact_path=str(path),
                                n_train_docs=32, metrics=metrics, activate=True)
    at = app_as("ada", "admin", page="model")
    assert not at.exception
    specs = vega_specs(at)
    assert specs, "no learning curve drawn"
    axes = [c["encoding"]["x"]["axis"]["format"] for c in specs[0]["hconcat"]]
    assert axes == ["d", ",d"]
