"""Where the database lives: ``DEID_DATABASE_URL``, else the config file, else a per-user SQLite file.

The default is a file in the per-user data directory (platformdirs), never in
the checkout, so notes are not committed or copied along with the code by
accident. The config file is YAML (``database_url: ...``) at
``$DEID_CONFIG`` or the per-user config directory.
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs
import yaml
from sqlalchemy.engine import make_url

from deid_core.errors import StoreError

ENV_URL = "DEID_DATABASE_URL"
ENV_CONFIG = "DEID_CONFIG"
APP_NAME = "deid-workbench"


def config_path() -> Path:
    explicit = os.environ.get(ENV_CONFIG)
    if explicit:
        return Path(explicit)
    return platformdirs.user_config_path(APP_NAME) / "config.yaml"


def default_sqlite_path() -> Path:
    return platformdirs.user_data_path(APP_NAME) / "workbench.db"


def database_url(explicit: str | None = None) -> str:
    """Resolve the URL in order: argument, environment, config file, default SQLite file."""
    if explicit:
        return explicit
    env = os.environ.get(ENV_URL)
    if env:
        return env
    path = config_path()
    if path.is_file():
        try:
            raw = yaml.safe_load(path.read_text("utf-8")) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise StoreError(f"{path}: cannot read the config file ({type(exc).__name__})") from None
        if not isinstance(raw, dict):
            raise StoreError(f"{path}: the config file must be a mapping")
        url = raw.get("database_url")
        if url:
            return str(url)
    db = default_sqlite_path()
    db.parent.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{db}"


def redacted(url: str) -> str:
    """The URL with any password hidden, for messages and logs."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 - an unparsable URL is shown as a placeholder
        return "<unparsable database URL>"
