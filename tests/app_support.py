"""Helpers for the AppTest page tests: a seeded SQLite store and signed-in app sessions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from streamlit.testing.v1 import AppTest

from deid_core.spans import Document, Span
from deid_core.store import repository as repo
from deid_core.store.engine import open_store
from deid_core.store.users import create_user
from deid_core.synthetic import generate_notes
from deid_core.ui.session import sign_in

APP = str(Path(__file__).resolve().parents[1] / "app.py")
PASSWORD = "correct horse battery"
PROJECT = "p"
ADMIN_PAGES = ("bias", "model", "import", "users", "export")
REVIEWER_PAGES = ("queue", "review", "account")


def seed_store(url: str, *, n_notes: int = 6, n_gold: int = 0, xss: bool = False) -> Any:
    """Users rita (reviewer), sam (reviewer), ada (admin); a project of synthetic notes.

    Unreviewed notes get their generated spans as a prediction with a
    decreasing log-probability, so the queue order is known: note 0 is the
    least confident. ``n_gold`` further notes come in as reviewed gold.
    """
    engine = open_store(url)
    create_user(engine, "rita", PASSWORD, role="reviewer")
    create_user(engine, "sam", PASSWORD, role="reviewer")
    create_user(engine, "ada", PASSWORD, role="admin")
    repo.create_project(engine, PROJECT, lang="en", scheme="i2b2_2014")
    notes = generate_notes(n_notes + n_gold, seed=11)
    preds = [
        d.with_meta(logprob=-50.0 + 5 * i, logprob_per_token=(-50.0 + 5 * i) / 100)
        for i, d in enumerate(notes[:n_notes])
    ]
    repo.import_documents(engine, PROJECT, preds, annotations="predictions")
    if n_gold:
        repo.import_documents(engine, PROJECT, notes[n_notes:], annotations="gold")
    if xss:
        text = 'Pt <script>alert("x")</script> seen <img src=x onerror=alert(1)> by Dr. Evil.'
        evil = Span(text.index("<img"), text.index("onerror") - 1, "<img src=x onerror=alert(2)>")
        repo.import_documents(engine, PROJECT, [Document("xss", text, (evil,), {"logprob": -999.0})],
                              annotations="predictions")
    return engine


def app_as(username: str | None, role: str = "reviewer", page: str | None = None) -> AppTest:
    """An AppTest on the app with ``username`` signed in (or nobody), on ``page``.

    The database is the one ``DEID_DATABASE_URL`` names (set it with monkeypatch).
    """
    at = AppTest.from_file(APP, default_timeout=120)
    if username is not None:
        sign_in(at.session_state, username, role)
    at.run()
    if page is not None:
        at.switch_page(f"pages/{page}.py").run()
    return at


def texts(elements: Any) -> list[str]:
    return [str(e.value) for e in elements]


def save_settings(at: AppTest, engine: Any, values: dict[str, Any], button: str) -> dict[str, Any]:
    """Set number inputs (by key), press ``button`` and return the project's stored settings."""
    for key, value in values.items():
        at.number_input(key=key).set_value(value)
    at.button(key=button).click().run()
    assert not at.exception
    return repo.get_project(engine, PROJECT).settings
