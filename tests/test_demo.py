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
    assert [r.logprob_span for r in queue] == sorted(r.logprob_span for r in queue)  # the default order
    # the reviewed slice carries the starter's prediction, so the PHI-left estimate has notes
    from deid_core.protect.estimate import estimate_project, reviewed_pairs

    pairs = reviewed_pairs(engine, "demo")
    assert len(pairs) == 3 and all(final for _, final in pairs)
    assert estimate_project(engine, "demo").documents == 3
    printed = out.getvalue()
    assert "username: admin" in printed and "username: reviewer" in printed
    assert {u.username for u in list_users(engine)} == {"admin", "reviewer"}
    again = io.StringIO()
    assert build_demo(tmp_path, TINY, out=again) == info and again.getvalue() == ""


def test_demo_is_the_one_data_directory_of_the_app(tmp_path, monkeypatch):
    """Exports, secrets and retrained models of the demo app land in the demo directory,
    not in the per-user directory (a walkthrough found exports under ~/.local/share)."""
    import subprocess
    import sys

    from deid_core.demo import demo_dir, demo_environment
    from deid_core.protect.surrogate_map import default_secret_path
    from deid_core.ui.exporting import data_dir
    from deid_core.ui.learning import models_dir

    monkeypatch.delenv("DEID_DEMO_DIR", raising=False)
    monkeypatch.delenv("DEID_DATABASE_URL", raising=False)
    monkeypatch.delenv("DEID_MODEL_DIR", raising=False)
    monkeypatch.setenv("DEID_DATA_DIR", str(tmp_path / "data dir"))
    directory = demo_dir()
    assert directory == tmp_path / "data dir" / "demo"
    env = demo_environment(directory)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert demo_dir() == directory  # the data directory moved, the demo stays found
    assert data_dir() == directory
    assert default_secret_path(1).is_relative_to(directory)
    assert models_dir("demo").is_relative_to(directory)
    assert env["DEID_DATABASE_URL"] == demo_database_url(directory)
    # scripts/demo evaluates these lines in bash: quoting survives a space in the path
    printed = subprocess.run([sys.executable, "-m", "deid_core.demo", "--print-env"],
                             capture_output=True, text=True, check=True).stdout
    echoed = subprocess.run(["bash", "-c", printed + 'printf %s "$DEID_DATA_DIR"'],
                            capture_output=True, text=True, check=True).stdout
    assert echoed == str(directory)


def test_streamlit_config_hides_deploy_and_listens_locally():
    """The project's .streamlit/config.toml: no Deploy button, localhost only."""
    from pathlib import Path

    import tomllib

    root = Path(__file__).resolve().parents[1]
    config = tomllib.loads((root / ".streamlit" / "config.toml").read_text("utf-8"))
    assert config["client"]["toolbarMode"] in ("viewer", "minimal")
    assert config["server"]["address"] == "127.0.0.1"
    # no forced full garbage collection after every run: it was most of a Review rerun
    assert config["runner"]["postScriptGC"] is False
    demo = (root / "scripts" / "demo").read_text("utf-8")
    assert 'cd "$(dirname "$0")/.."' in demo and "--server.address 0.0.0.0" not in demo.split("exec")[-1]
