"""Where the database lives: argument, environment, config file, per-user default; never the repo."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from deid_core.errors import StoreError
from deid_core.store.config import database_url, default_sqlite_path, redacted
from deid_core.store.engine import current_revision, head_revision, open_store

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def clean_env(tmp_path, monkeypatch):  # type: ignore[no-untyped-def]
    monkeypatch.delenv("DEID_DATABASE_URL", raising=False)
    monkeypatch.setenv("DEID_CONFIG", str(tmp_path / "missing.yaml"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    return tmp_path


@pytest.mark.parametrize(
    "explicit,env,config,expected",
    [
        ("sqlite:///a.db", "sqlite:///b.db", "database_url: sqlite:///c.db\n", "sqlite:///a.db"),
        (None, "sqlite:///b.db", "database_url: sqlite:///c.db\n", "sqlite:///b.db"),
        (None, None, "database_url: sqlite:///c.db\n", "sqlite:///c.db"),
        (None, None, "other: 1\n", "default"),
        (None, None, None, "default"),
    ],
)
def test_url_resolution_order(clean_env, monkeypatch, explicit, env, config, expected) -> None:  # type: ignore[no-untyped-def]
    if env:
        monkeypatch.setenv("DEID_DATABASE_URL", env)
    if config is not None:
        cfg = clean_env / "config.yaml"
        cfg.write_text(config, encoding="utf-8")
        monkeypatch.setenv("DEID_CONFIG", str(cfg))
    url = database_url(explicit)
    if expected == "default":
        path = default_sqlite_path()
        assert url == f"sqlite:///{path}"
        assert path.is_relative_to(clean_env / "data") and path.parent.is_dir()
        assert not path.is_relative_to(REPO)
    else:
        assert url == expected


@pytest.mark.parametrize("content", ["- a list\n", "database_url: [unclosed\n"])
def test_bad_config_file(clean_env, monkeypatch, content) -> None:  # type: ignore[no-untyped-def]
    cfg = clean_env / "config.yaml"
    cfg.write_text(content, encoding="utf-8")
    monkeypatch.setenv("DEID_CONFIG", str(cfg))
    with pytest.raises(StoreError, match="config file"):
        database_url()


def test_redacted_hides_password() -> None:
    shown = redacted("postgresql+psycopg://bob:hunter2@db:5432/x")
    assert "hunter2" not in shown and "bob" in shown


def test_open_store_creates_default_file_outside_repo(clean_env) -> None:  # type: ignore[no-untyped-def]
    engine = open_store()
    try:
        assert current_revision(engine) == head_revision()
        assert default_sqlite_path().is_file()
    finally:
        engine.dispose()


def test_alembic_command_line_from_checkout(tmp_path) -> None:  # type: ignore[no-untyped-def]
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    proc = subprocess.run(
        [sys.executable, "-m", "alembic", "-c", str(REPO / "db" / "alembic.ini"), "upgrade", "head"],
        cwd=tmp_path, env={"DEID_DATABASE_URL": url, "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, check=False, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    engine = open_store(url, upgrade=False)
    try:
        assert current_revision(engine) == head_revision()
    finally:
        engine.dispose()
