"""Role gating: a reviewer cannot open admin pages; an admin can open every page."""

from __future__ import annotations

from pathlib import Path

import pytest
from app_support import ADMIN_PAGES, REVIEWER_PAGES, app_as, seed_store, texts
from streamlit.testing.v1 import AppTest

from deid_core.ui.session import sign_in

PAGES = Path(__file__).resolve().parents[1] / "pages"


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    url = f"sqlite:///{tmp_path_factory.mktemp('roles') / 'app.db'}"
    seed_store(url)
    return url


def test_reviewer_navigation_has_no_admin_page(url, monkeypatch):
    monkeypatch.setenv("DEID_DATABASE_URL", url)
    at = app_as("rita", "reviewer")
    assert not at.exception
    for page in ADMIN_PAGES:
        with pytest.raises(ValueError, match="Could not find a navigation page"):
            at.switch_page(f"pages/{page}.py")


@pytest.mark.parametrize("page", ADMIN_PAGES)
def test_admin_page_script_itself_refuses_a_reviewer(url, monkeypatch, page):
    """Defence in depth: run the page script directly, as a crafted request would."""
    monkeypatch.setenv("DEID_DATABASE_URL", url)
    at = AppTest.from_file(str(PAGES / f"{page}.py"), default_timeout=60)
    sign_in(at.session_state, "rita", "reviewer")
    at.run()
    assert not at.exception
    assert texts(at.error) == ["This page is for administrators."]
    assert texts(at.title) == []  # nothing of the page was rendered


@pytest.mark.parametrize(
    "user, role, pages",
    [("ada", "admin", ADMIN_PAGES + REVIEWER_PAGES), ("rita", "reviewer", REVIEWER_PAGES)],
)
def test_pages_open_without_exceptions(url, monkeypatch, user, role, pages):
    monkeypatch.setenv("DEID_DATABASE_URL", url)
    at = app_as(user, role)
    for page in pages:
        at.switch_page(f"pages/{page}.py").run()
        assert not at.exception, page
        assert not at.error, page
        assert len(at.title) == 1, page


def test_signed_out_user_only_has_the_sign_in_page(url, monkeypatch):
    monkeypatch.setenv("DEID_DATABASE_URL", url)
    at = app_as(None)
    assert texts(at.title) == ["deid-workbench"]
    with pytest.raises(ValueError):
        at.switch_page("pages/queue.py")
