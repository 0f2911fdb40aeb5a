"""The demo builder: a project pre-annotated by a starter model trained on other notes."""

from __future__ import annotations

import io

from deid_core.demo import DemoConfig, build_demo, demo_database_url, is_built
from deid_core.engine.model import DeidModel
from deid_core.store import repository as repo
from deid_core.store.engine import open_store
from deid_core.store.users import list_users

TINY = DemoConfig(n_notes=8, n_gold=3)


def test_build_demo_is_complete_and_idempotent(tmp_path, monkeypatch):
    # the real starter code path, at the test-only size, in a private cache
    monkeypatch.setenv("DEID_STARTER_DIR", str(tmp_path / "starter"))
    monkeypatch.setenv("DEID_STARTER_SIZE", "tiny")
    out = io.StringIO()
    info = build_demo(tmp_path, TINY, out=out)
    assert is_built(tmp_path)
    assert info["notes"] == 8 and info["gold_notes"] == 3 and info["predicted_notes"] == 5
    engine = open_store(demo_database_url(tmp_path))
    counts = repo.status_counts(engine, "demo")
    assert counts["reviewed"] == 3 and counts["new"] == 5
    active = repo.active_model_version(engine, "demo")
    assert active is not None and active.version == info["model_version"]
    # the demo pre-annotates with a copy of the starter, kept beside the demo
    from deid_core.synthetic.starter import starter_dir

    assert info["model_version"] == DeidModel.load(starter_dir("en")).version
    assert active.artifact_path.startswith(str(tmp_path / "models"))
    queue = repo.review_queue(engine, "demo")
    assert len(queue) == 5 and all(r.logprob is not None for r in queue)
    assert [r.logprob for r in queue] == sorted(r.logprob for r in queue)
    printed = out.getvalue()
    assert "username: admin" in printed and "username: reviewer" in printed
    assert {u.username for u in list_users(engine)} == {"admin", "reviewer"}
    again = io.StringIO()
    assert build_demo(tmp_path, TINY, out=again) == info and again.getvalue() == ""
