"""The Model page's rule table in Debian's chromium: an admin sees the reviewers' verdict on a
rule, demotes it (the threshold check) and undoes the demotion.

The store is seeded so that reviewers deleted all 22 spans of the fixture
model's ``phone_dashed`` rule. Screenshots go to ``artifacts/screenshots/``.
"""

from __future__ import annotations

import pytest
from browser_support import MARKS, PASSWORD, chromium, shot, streamlit_app

pytestmark = MARKS


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from rule_feedback_support import seed

    tmp = tmp_path_factory.mktemp("rules")
    url = f"sqlite:///{tmp / 'rules.db'}"
    seed(url).dispose()
    with streamlit_app(tmp, url, extra_args=("--server.address", "127.0.0.1", "--server.headless",
                                              "true", "--browser.gatherUsageStats", "false")) as base:
        yield base, url


def settings(url: str) -> dict:
    from deid_core.store import repository as repo
    from deid_core.store.engine import open_store

    engine = open_store(url)
    try:
        return repo.get_project(engine, "p").settings
    finally:
        engine.dispose()


def test_admin_sees_the_rule_table_demotes_and_undoes(server):
    base, url = server
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 1400})
        page.goto(base)
        page.get_by_role("textbox", name="Username").fill("ada")
        page.get_by_role("textbox", name="Password").fill(PASSWORD)
        page.get_by_role("button", name="Sign in").click()
        page.get_by_role("link", name="Model").click()
        page.get_by_role("heading", name="Rules").wait_for(timeout=90_000)
        page.get_by_text("on 11 reviewed notes").wait_for(timeout=30_000)
        # The table, with the rule reviewers rejected picked first and offered for demotion.
        rules = page.locator('[data-testid="stDataFrame"]')
        rules.first.wait_for(state="visible", timeout=30_000)
        demote = page.get_by_role("button", name="Demote phone_dashed to a feature")
        demote.wait_for(timeout=30_000)
        page.wait_for_timeout(800)
        shot(page, "rules_01_table")

        page.get_by_role("button", name="Demote the rules below the threshold now").click()
        undo = page.get_by_role("button", name="Undo demotion of phone_dashed")
        undo.wait_for(timeout=120_000)
        page.get_by_text("Demotions and undos (audit trail)").wait_for(timeout=30_000)
        assert settings(url)["demoted_rules"] == ["phone_dashed"]
        page.wait_for_timeout(800)
        shot(page, "rules_02_demoted")

        undo.click()
        page.get_by_role("button", name="Demote phone_dashed to a feature").wait_for(timeout=120_000)
        after = settings(url)
        assert after["demoted_rules"] == [] and after["restored_rules"] == ["phone_dashed"]
        page.wait_for_timeout(800)
        shot(page, "rules_03_restored")
