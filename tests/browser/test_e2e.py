"""End to end in Debian's chromium: sign in, review by mouse and keyboard, bias, XSS inert.

Starts ``streamlit run app.py`` on a free localhost port against a temporary
database seeded here (a tiny model pre-annotates the queue). Screenshots are
kept under ``artifacts/screenshots/`` (git-ignored) for a person to look at.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from browser_support import MARKS, PASSWORD, chromium, shot, streamlit_app

XSS_TEXT = (
    "Patient Zed Quill seen today.\n"
    "<script>window.__xss = 'script'</script> Note: <img src=x onerror=\"window.__xss='img'\">\n"
    "Follow up with Dr. Alma Ruiz."
)
XSS_LABEL = "<img src=x onerror=\"window.__xss='label'\">"

pytestmark = MARKS


def seed(url: str, model_root: Path) -> None:
    from deid_core.engine.model import TrainConfig, train_model
    from deid_core.schemes import load_scheme
    from deid_core.spans import Document, Span
    from deid_core.store import repository as repo
    from deid_core.store.engine import open_store
    from deid_core.store.users import create_user
    from deid_core.synthetic import generate_notes
    from deid_core.ui.queue import predict_unreviewed

    engine = open_store(url)
    create_user(engine, "rita", PASSWORD, role="reviewer")
    create_user(engine, "ada", PASSWORD, role="admin")
    repo.create_project(engine, "e2e", lang="en", scheme="i2b2_2014")
    model = train_model(generate_notes(16, seed=21), lang="en", scheme=load_scheme("i2b2_2014"),
                        config=TrainConfig(max_iterations=25))
    path = model.save(model_root / model.version)
    notes = generate_notes(10, seed=22)
    repo.import_documents(engine, "e2e", notes[:6], annotations="gold")
    repo.import_documents(engine, "e2e", [d.with_spans(()) for d in notes[6:]])
    mv = repo.register_model_version(engine, "e2e", version=model.version,
                                     artifact_path=str(path), activate=True)
    predict_unreviewed(engine, "e2e", model, model_version=mv.version, model_version_id=mv.id,
                       bias=0.0)
    start = XSS_TEXT.index("Zed")
    evil = Document("xss-note", XSS_TEXT, (Span(start, start + 3, XSS_LABEL, "crf:x", 0.4),),
                    {"logprob": -9999.0, "logprob_per_token": -99.0})
    repo.import_documents(engine, "e2e", [evil], annotations="predictions")
    engine.dispose()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("e2e")
    url = f"sqlite:///{tmp / 'e2e.db'}"
    seed(url, tmp / "models")
    with streamlit_app(tmp, url, extra_args=("--server.address", "127.0.0.1", "--server.headless",
                                              "true", "--browser.gatherUsageStats", "false")) as base:
        yield base


@pytest.fixture(scope="module")
def browser():
    with chromium() as b:
        yield b


def queue_table(page) -> None:
    """Wait until the queue's table is on screen (its grid paints after the rest of the page)."""
    page.locator('[data-testid="stDataFrame"]').first.wait_for(state="visible", timeout=30_000)
    page.wait_for_timeout(500)


def sign_in(page, base: str, username: str) -> None:
    page.goto(base)
    page.get_by_role("textbox", name="Username").fill(username)
    page.get_by_role("textbox", name="Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.get_by_text("Review queue").first.wait_for(timeout=30_000)


def reviewed_count(page) -> str:
    return page.get_by_text("notes reviewed").first.inner_text()


def select_word(page, word: str) -> None:
    """Drag the mouse across ``word`` inside the note, as a reviewer would."""
    box = page.evaluate(
        """(word) => {
            const note = document.querySelector('.deid-review .deid-note');
            const walker = document.createTreeWalker(note, NodeFilter.SHOW_TEXT);
            let node;
            while ((node = walker.nextNode())) {
                const i = node.data.indexOf(word);
                if (i >= 0 && !node.parentElement.closest('mark')) {
                    const r = document.createRange();
                    r.setStart(node, i); r.setEnd(node, i + word.length);
                    const b = r.getBoundingClientRect();
                    return {x: b.left, y: b.top, w: b.width, h: b.height};
                }
            }
            return null;
        }""",
        word,
    )
    assert box is not None, f"{word!r} not found outside highlights"
    y = box["y"] + box["h"] / 2
    page.mouse.move(box["x"] + 1, y)
    page.mouse.down()
    page.mouse.move(box["x"] + box["w"] / 2, y, steps=4)
    page.mouse.move(box["x"] + box["w"] - 1, y, steps=4)
    page.mouse.up()


def test_review_flow_bias_and_xss(server, browser):
    dialogs: list[str] = []
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))

    # 1. a reviewer signs in
    sign_in(page, server, "rita")
    before = reviewed_count(page)
    queue_table(page)
    shot(page, "01_queue")

    # 2. the least confident note (the XSS note was given the lowest log-probability)
    page.get_by_role("button", name="Review next").click()
    page.get_by_text("Note xss-note").wait_for(timeout=30_000)
    page.locator(".deid-review .deid-note").wait_for(timeout=30_000)
    shot(page, "02_review_least_confident")

    # 6 (on the reviewer's page). nothing from the note or the label ran or was parsed as HTML
    note = page.locator(".deid-review .deid-note")
    assert "<script>window.__xss = 'script'</script>" in note.inner_text()
    assert note.locator("img, script").count() == 0
    assert page.locator(".deid-review .deid-legend").count() == 1
    assert XSS_LABEL in page.locator("mark.deid-span").first.inner_text()

    # 3. select a word with the mouse and label it with key 3 (PATIENT: keys follow label frequency)
    assert page.locator(".deid-review .deid-legend-item").nth(2).inner_text().endswith("PATIENT")
    select_word(page, "Quill")
    page.keyboard.press("3")
    page.locator("mark.deid-span", has_text="Quill").wait_for(timeout=30_000)
    assert page.locator("mark.deid-span", has_text="Quill").get_attribute("data-label") == "PATIENT"
    shot(page, "03_labelled_with_key")

    # 4. accept and next with the keyboard, then the queue shows one more reviewed note
    page.keyboard.press("a")
    page.get_by_text("Saved note xss-note").wait_for(timeout=30_000)
    page.get_by_role("link", name="Queue").click()
    page.get_by_text("notes reviewed").first.wait_for(timeout=30_000)
    after = reviewed_count(page)
    assert after != before and after.startswith(str(int(before.split()[0]) + 1))
    queue_table(page)
    shot(page, "04_queue_after_save")

    # 5. an admin moves the bias slider: measures, highlights and the curve change
    page.get_by_test_id("stSidebarUserContent").get_by_role("button", name="Sign out").click()
    page.get_by_role("button", name="Sign in").wait_for(timeout=30_000)
    sign_in(page, server, "ada")
    page.get_by_role("link", name="Bias").click()
    page.get_by_text("Strict precision", exact=True).wait_for(timeout=90_000)
    chart = page.locator("[data-testid='stVegaLiteChart']").first
    chart.wait_for(timeout=30_000)
    page.wait_for_timeout(1500)
    marks_before = page.locator(".deid-note mark.deid-span").count()
    chart_before = chart.screenshot()
    shot(page, "05_bias_before")
    slider = page.get_by_role("slider")
    slider.focus()
    page.keyboard.press("Home")  # the most recall-favouring bias, -5
    page.get_by_text("-5.00", exact=False).first.wait_for(timeout=30_000)
    page.wait_for_timeout(2500)
    marks_after = page.locator(".deid-note mark.deid-span").count()
    chart_after = chart.screenshot()
    shot(page, "05_bias_after")
    assert marks_after > marks_before
    assert chart_after != chart_before

    # 6. nothing executed anywhere
    assert page.evaluate("window.__xss") is None
    assert dialogs == []


def test_import_reports_a_bad_file_and_imports_nothing(server, browser, tmp_path):
    import json

    from deid_core.corpus import document_to_dict
    from deid_core.synthetic import generate_notes

    good = [document_to_dict(d) for d in generate_notes(2, seed=77)]
    bad = dict(good[1], id="broken", spans=[{"start": 5, "end": 999999, "label": "DATE"}])
    bad_file = tmp_path / "bad.jsonl"
    bad_file.write_text("\n".join(json.dumps(x) for x in [*good, bad]) + "\n", "utf-8")
    good_file = tmp_path / "good.jsonl"
    good_file.write_text("\n".join(json.dumps(x) for x in good) + "\n", "utf-8")

    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    sign_in(page, server, "ada")
    total_before = page.get_by_text("notes reviewed").first.inner_text().split()[2]
    page.get_by_role("link", name="Import").click()
    uploader = page.locator("[data-testid='stFileUploaderDropzoneInput']")
    uploader.set_input_files(str(bad_file))
    page.get_by_text("bad.jsonl").first.wait_for(timeout=30_000)
    page.get_by_role("button", name="Import", exact=True).click()
    error = page.get_by_text("Nothing was imported")
    error.wait_for(timeout=60_000)
    assert "bad.jsonl, line 3" in error.inner_text() and "deid-import-" not in error.inner_text()
    shot(page, "06_import_error")
    page.get_by_role("link", name="Queue").click()
    page.get_by_text("notes reviewed").first.wait_for(timeout=30_000)
    assert page.get_by_text("notes reviewed").first.inner_text().split()[2] == total_before

    page.get_by_role("link", name="Import").click()
    uploader = page.locator("[data-testid='stFileUploaderDropzoneInput']")
    uploader.set_input_files(str(good_file))
    page.get_by_text("good.jsonl").first.wait_for(timeout=30_000)
    page.get_by_role("button", name="Import", exact=True).click()
    page.get_by_text("Imported 2 notes with").wait_for(timeout=60_000)  # not the job's "imported 2 notes, ..."
    shot(page, "07_import_ok")
    page.close()
