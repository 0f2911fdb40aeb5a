"""The review editor in Debian's chromium: every keyboard path, edits with no server round
trip, edits that survive a reload and a closed tab, a demoted admin, and the walkthrough
defects only a browser shows (dark mode, the Deploy button, the import uploader).

One app server and one browser for the module; each test signs in as its own user in its
own browser context and opens its own note with ``?doc=<id>``. Screenshots of Review in
light and dark mode go to ``artifacts/screenshots/`` (git-ignored) for a person to look at.
"""

from __future__ import annotations

import json
import re

import pytest
from browser_support import MARKS, PASSWORD, chromium, shot, streamlit_app

USERS = ("kim", "lee", "max", "ned", "ora", "pia", "quin", "ray", "sue", "tom", "uma", "val")

# The misses note: "Stevens" is a DOCTOR span once and unmarked once ("A. Stevens"),
# the date is an uncertain span, and the ZIP code is not marked at all.
MISSES = "Dr. Stevens saw the patient today.\nLater A. Stevens called from 02139 about 03/04/2067."
CLEAN = "Patient seen on 01/02/2067 by Dr. Ruiz at Mercy Hospital."
EDIT = "Ann Lee (MRN 445566) was seen by Dr. Bo Chan in Salem on 05/06/2067 for a cough."
# An all-digit AGE span: its copy in a reference range is noise, its copy on its own is not.
NUMBERS = "Age 107 today. Chloride 104 (98-107) mmol/L, BP 120/107. Seen again at age 107."

pytestmark = MARKS


def _span(text, word, label, score=0.97, nth=0, source="crf:seed"):
    from deid_core.spans import Span

    start = -1
    for _ in range(nth + 1):
        start = text.index(word, start + 1)
    return Span(start, start + len(word), label, source, score)


def seed(url: str) -> dict[str, int]:
    from deid_core.spans import Document
    from deid_core.store import repository as repo
    from deid_core.store.engine import open_store
    from deid_core.store.users import create_user

    engine = open_store(url)
    for name in USERS:
        create_user(engine, name, PASSWORD, role="reviewer")
    create_user(engine, "boss", PASSWORD, role="admin")
    create_user(engine, "ada", PASSWORD, role="admin")
    repo.create_project(engine, "kb", lang="en", scheme="i2b2_2014")
    notes = {}
    for i, name in enumerate(USERS):
        # one note to edit per user, and one that comes next (accept, then back); the
        # store skips a note whose text it has already, so each text ends differently
        edit, nxt = f"{EDIT}\nCopy {i}.", f"{CLEAN}\nCopy {i}."
        notes[f"edit-{name}"] = Document(
            f"edit-{name}", edit, (_span(edit, "Ann Lee", "PATIENT"), _span(edit, "Bo Chan", "DOCTOR"),
                                   _span(edit, "05/06/2067", "DATE", 0.55)),
            {"logprob": -100.0 + i, "logprob_per_token": -1.0})
        notes[f"next-{name}"] = Document(
            f"next-{name}", nxt, (_span(nxt, "01/02/2067", "DATE"), _span(nxt, "Ruiz", "DOCTOR")),
            {"logprob": -50.0 + i, "logprob_per_token": -0.5})
    notes["misses"] = Document("misses", MISSES, (_span(MISSES, "Stevens", "DOCTOR"),
                                                  _span(MISSES, "03/04/2067", "DATE", 0.4)),
                               {"logprob": -10.0, "logprob_per_token": -0.1})
    notes["clean"] = Document("clean", CLEAN, (_span(CLEAN, "01/02/2067", "DATE"),
                                               _span(CLEAN, "Ruiz", "DOCTOR"),
                                               _span(CLEAN, "Mercy Hospital", "HOSPITAL")),
                              {"logprob": -5.0, "logprob_per_token": -0.05})
    notes["numbers"] = Document("numbers", NUMBERS, (_span(NUMBERS, "107", "AGE"),),
                                {"logprob": -1.0, "logprob_per_token": -0.01})
    repo.import_documents(engine, "kb", list(notes.values()), annotations="predictions")
    ids = {key: repo.find_document(engine, "kb", key) for key in notes}
    engine.dispose()
    return ids


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("kb")
    url = f"sqlite:///{tmp / 'kb.db'}"
    ids = seed(url)
    with streamlit_app(tmp, url) as base:
        yield {"base": base, "ids": ids, "url": url, "tmp": tmp}


@pytest.fixture(scope="module")
def browser():
    with chromium() as b:
        yield b


class Sent:
    """Counts websocket messages the page sends: an edit applied in the browser sends none."""

    def __init__(self, page):
        self.n = 0
        page.on("websocket", lambda ws: ws.on("framesent", lambda _frame: self.bump()))

    def bump(self) -> None:
        self.n += 1


def sign_in(browser, app, user, *, scheme="light", context=None):
    context = context or browser.new_context(viewport={"width": 1400, "height": 1000},
                                             color_scheme=scheme)
    page = context.new_page()
    page.goto(app["base"])
    page.get_by_role("textbox", name="Username").fill(user)
    page.get_by_role("textbox", name="Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.get_by_text("Review queue").first.wait_for(timeout=30_000)
    return page


def open_note(page, app, key):
    doc_id = app["ids"][key]
    page.goto(f"{app['base']}review?doc={doc_id}")
    editor(page, doc_id)
    return doc_id


def editor(page, doc_id):
    page.locator(f'.deid-review[data-doc="{doc_id}"] .deid-note').wait_for(timeout=30_000)
    page.wait_for_timeout(300)
    page.locator(".deid-review .deid-note").focus()


def spans(page):
    return page.evaluate("""() => Array.from(document.querySelectorAll('.deid-review mark.deid-span'))
        .map(m => [m.dataset.label, Array.from(m.querySelectorAll('.deid-text'))
                   .map(t => t.textContent).join('')])""")


def active(page):
    node = page.locator(".deid-review .deid-active")
    return node.first.get_attribute("data-label") if node.count() else None


def layer(app, doc_id):
    from deid_core.store import repository as repo
    from deid_core.store.engine import open_store

    engine = open_store(app["url"])
    try:
        layers = repo.get_document(engine, doc_id)
        drafts = repo.list_drafts(engine, doc_id=doc_id)
        return layers, drafts
    finally:
        engine.dispose()


def text_spans(text, spans_):
    return sorted((text[s.start:s.end], s.label) for s in spans_)


# ---------------------------------------------------------------- keyboard paths


def test_select_with_shift_arrows_and_label_with_a_number_no_round_trip(browser, app):
    page = sign_in(browser, app, "kim")
    sent = Sent(page)
    open_note(page, app, "edit-kim")
    before = sent.n
    from deid_core.engine.tokenize import tokenize

    words = [t.text for t in tokenize(EDIT).tokens]
    # the cursor starts on the first token: arrows move it to "Salem", key 7 labels it CITY
    for _ in range(words.index("Salem")):
        page.keyboard.press("ArrowRight")
    assert page.locator(".deid-cursor").inner_text() == "Salem"
    page.keyboard.press("7")
    assert ["CITY", "Salem"] in spans(page)
    # Shift+arrow grows a selection token by token: "a cough", key 4 (HOSPITAL)
    for _ in range(words.index("a") - words.index("Salem")):
        page.keyboard.press("ArrowRight")
    page.keyboard.press("Shift+ArrowRight")
    assert "".join(page.locator(".deid-selected").all_inner_texts()) == "a cough"
    page.keyboard.press("ArrowLeft")  # an arrow without Shift drops the selection
    assert page.locator(".deid-selected").count() == 0
    assert page.locator(".deid-cursor").inner_text() == "a"
    page.keyboard.press("Shift+ArrowRight")
    assert "".join(page.locator(".deid-selected").all_inner_texts()) == "a cough"
    page.keyboard.press("4")
    assert ["HOSPITAL", "a cough"] in spans(page)
    assert sent.n == before  # both edits applied in the browser: nothing went to the server
    assert page.get_by_test_id("deid-dirty").inner_text() == "yes"
    shot(page, "10_review_keyboard_light")
    page.context.close()


def test_palette_filters_labels_and_enter_picks_zip(browser, app):
    page = sign_in(browser, app, "lee")
    open_note(page, app, "misses")
    page.locator(".deid-review span.deid-text", has_text="02139").first.click()
    page.keyboard.press("/")
    page.keyboard.type("zi")
    items = page.locator(".deid-palette-item")
    assert items.first.inner_text() == "ZIP"
    page.keyboard.press("Enter")
    assert ["ZIP", "02139"] in spans(page)
    assert page.locator(".deid-palette").is_hidden()
    page.context.close()


def test_tab_cycles_spans_and_n_p_jump_to_what_needs_checking(browser, app):
    page = sign_in(browser, app, "max")
    open_note(page, app, "misses")
    page.keyboard.press("Tab")
    assert active(page) == "DOCTOR"
    page.keyboard.press("Tab")
    assert active(page) == "DATE"
    page.keyboard.press("Shift+Tab")
    assert active(page) == "DOCTOR"
    # n: the unmarked "Stevens" (a possible miss: PHI elsewhere in the note), then the
    # uncertain date; p goes back
    page.keyboard.press("n")
    hint = page.locator(".deid-review .deid-active")
    assert hint.evaluate("n => n.classList.contains('deid-near')") and hint.inner_text() == "Stevens"
    page.keyboard.press("n")
    assert active(page) == "DATE"
    page.keyboard.press("p")
    assert page.locator(".deid-review .deid-active").inner_text() == "Stevens"
    page.context.close()


def test_possible_miss_stands_out_and_enter_accepts_it(browser, app):
    page = sign_in(browser, app, "ned")
    open_note(page, app, "misses")
    miss = page.locator(".deid-review span.deid-near", has_text="Stevens")
    assert miss.count() == 1
    # the same colour as the DOCTOR span, as a hatched fill, and counted
    style = miss.evaluate("n => getComputedStyle(n).backgroundImage")
    assert "repeating-linear-gradient" in style
    doctor = page.locator(".deid-review .deid-legend-item", has_text="DOCTOR").locator(".deid-swatch")
    colour = doctor.evaluate("n => getComputedStyle(n).backgroundColor")
    assert miss.evaluate("n => getComputedStyle(n).borderBottomColor") == colour
    assert page.get_by_test_id("deid-count-misses").inner_text() == "1"
    page.keyboard.press("n")
    page.keyboard.press("Enter")  # one key accepts it
    assert spans(page).count(["DOCTOR", "Stevens"]) == 2
    assert page.get_by_test_id("deid-count-misses").inner_text() == "0"
    # Enter on the uncertain date confirms it: no longer uncertain
    assert page.get_by_test_id("deid-count-uncertain").inner_text() == "1"
    page.keyboard.press("n")
    page.keyboard.press("Enter")
    assert page.get_by_test_id("deid-count-uncertain").inner_text() == "0"
    page.context.close()


def test_no_possible_miss_for_digits_inside_a_range_or_lab_value(browser, app):
    page = sign_in(browser, app, "tom")
    open_note(page, app, "numbers")
    misses = page.locator(".deid-review span.deid-near")
    assert misses.count() == 1  # not the "107" of "(98-107)" nor of "120/107"
    assert int(misses.first.get_attribute("data-s")) == NUMBERS.rindex("107")
    assert page.get_by_test_id("deid-count-misses").inner_text() == "1"
    page.context.close()


def test_brackets_repeat_on_the_current_span_delete_undo_redo(browser, app):
    page = sign_in(browser, app, "ora")
    open_note(page, app, "edit-ora")
    page.keyboard.press("Tab")  # "Ann Lee"
    assert active(page) == "PATIENT"
    page.keyboard.press("]")
    page.keyboard.press("]")  # repeatable: "Ann Lee (MRN"
    assert ["PATIENT", "Ann Lee (MRN"] in spans(page)
    page.keyboard.press("}")
    page.keyboard.press("}")  # shrink back from the right
    assert ["PATIENT", "Ann Lee"] in spans(page)
    page.keyboard.press("{")  # shrink from the left
    assert ["PATIENT", "Lee"] in spans(page)
    page.keyboard.press("[")
    assert ["PATIENT", "Ann Lee"] in spans(page)
    page.keyboard.press("Tab")  # "Bo Chan"
    page.keyboard.press("Delete")
    assert all(label != "DOCTOR" for label, _ in spans(page))
    page.keyboard.press("u")
    assert ["DOCTOR", "Bo Chan"] in spans(page)
    page.keyboard.press("Shift+U")
    assert all(label != "DOCTOR" for label, _ in spans(page))
    page.keyboard.press("Tab")  # relabel with a number: the date becomes AGE (5), then DATE (1)
    assert active(page) == "DATE"
    page.keyboard.press("5")
    assert ["AGE", "05/06/2067"] in spans(page)
    page.keyboard.press("1")
    assert ["DATE", "05/06/2067"] in spans(page)
    page.keyboard.press("?")
    assert page.locator(".deid-help").is_visible() and "Shift+" in page.locator(".deid-help").inner_text()
    shot(page, "11_review_cheat_sheet")
    page.keyboard.press("?")
    assert page.locator(".deid-help").is_hidden()
    page.context.close()


def test_a_accepts_and_moves_on_b_goes_back_and_reopens(browser, app):
    page = sign_in(browser, app, "pia")
    first = open_note(page, app, "edit-pia")
    page.keyboard.press("Tab")
    page.keyboard.press("Delete")  # drop "Ann Lee"
    page.keyboard.press("a")
    page.get_by_text("Saved note edit-pia").wait_for(timeout=30_000)
    page.locator(f'.deid-review:not([data-doc="{first}"]) .deid-note').wait_for(timeout=30_000)
    saved, _ = layer(app, first)
    assert saved.status == "reviewed"
    assert ("Ann Lee", "PATIENT") not in text_spans(saved.document.text, saved.document.spans)
    assert "1 of" in page.locator(".deid-progress").inner_text() or "reviewed" in page.locator(
        ".deid-progress").inner_text()
    assert "this session: 1 note" in page.locator(".deid-progress").inner_text()
    page.keyboard.press("b")
    page.get_by_text("Reopened the previous note").wait_for(timeout=30_000)
    editor(page, first)
    back, _ = layer(app, first)
    assert back.status == "in_review" and back.assigned_to == "pia"  # the accept is undone
    assert ["PATIENT", "Ann Lee"] not in spans(page)  # and it opens as it was accepted
    page.context.close()


def test_a_clean_note_takes_one_key(browser, app):
    page = sign_in(browser, app, "quin")
    doc_id = open_note(page, app, "clean")
    page.keyboard.press("a")
    page.get_by_text("Saved note clean").wait_for(timeout=30_000)
    saved, _ = layer(app, doc_id)
    assert saved.status == "reviewed" and len(saved.document.spans) == 3
    page.context.close()


# ---------------------------------------------------------------- edits that survive


def test_edits_survive_a_reload(browser, app):
    page = sign_in(browser, app, "ray")
    doc_id = open_note(page, app, "edit-ray")
    page.keyboard.press("Tab")
    page.keyboard.press("Delete")
    page.wait_for_timeout(3000)  # the autosave, a moment after the last edit
    _, drafts = layer(app, doc_id)
    assert [d.reason for d in drafts] == ["autosave"]
    page.reload()  # a new Streamlit session: the cookie signs in again, ?doc= reopens the note
    editor(page, doc_id)
    assert ["PATIENT", "Ann Lee"] not in spans(page)
    assert page.get_by_test_id("deid-dirty").inner_text() == "yes"
    assert page.locator(".deid-restore").is_hidden()  # nothing to restore: the server had it
    page.context.close()


def test_edits_survive_a_closed_tab(browser, app):
    page = sign_in(browser, app, "sue")
    context = page.context
    doc_id = open_note(page, app, "edit-sue")
    page.keyboard.press("Tab")
    page.keyboard.press("Delete")  # closed at once: before any autosave reached the server
    page.close()
    _, drafts = layer(app, doc_id)
    assert drafts == []
    again = context.new_page()
    again.goto(f"{app['base']}review?doc={doc_id}")
    editor(again, doc_id)
    assert ["PATIENT", "Ann Lee"] in spans(again)  # the server's layer
    restore = again.locator(".deid-restore")
    assert restore.is_visible() and "kept in this browser" in restore.inner_text()
    restore.get_by_role("button", name="Restore them").click()
    assert ["PATIENT", "Ann Lee"] not in spans(again)
    context.close()


# ---------------------------------------------------------------- sessions and roles


def test_a_demoted_admin_loses_admin_pages_on_the_next_click(browser, app):
    from deid_core.store.engine import open_store
    from deid_core.store.users import set_role

    page = sign_in(browser, app, "boss")
    page.get_by_role("link", name="Users").click()
    page.get_by_role("heading", name="Users").wait_for(timeout=30_000)
    engine = open_store(app["url"])
    set_role(engine, "boss", "reviewer", actor="ada")
    engine.dispose()
    page.get_by_role("link", name="Queue").click()  # the next click
    page.get_by_text("Review queue").first.wait_for(timeout=30_000)
    assert page.get_by_role("link", name="Users").count() == 0
    assert "(reviewer)" in page.get_by_text("Signed in as").inner_text()
    page.goto(app["base"] + "users")  # typing the address does not help either
    page.get_by_text("Review queue").first.wait_for(timeout=30_000)
    assert page.get_by_role("heading", name="Users").count() == 0
    page.context.close()


# ---------------------------------------------------------------- walkthrough defects


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_review_in_light_and_dark_mode_is_readable(browser, app, scheme):
    page = sign_in(browser, app, "tom" if scheme == "light" else "uma", scheme=scheme)
    open_note(page, app, "misses")
    page.wait_for_timeout(500)
    note_bg = page.locator(".deid-review .deid-note").evaluate("n => getComputedStyle(n).backgroundColor")
    kbd = page.locator(".deid-review .deid-legend kbd").first
    fg = kbd.evaluate("n => getComputedStyle(n).color")
    assert "rgba" not in kbd.evaluate("n => getComputedStyle(n).backgroundColor")
    bg = kbd.evaluate("n => getComputedStyle(n).backgroundColor")
    app_bg = page.locator('[data-testid="stApp"]').evaluate("n => getComputedStyle(n).backgroundColor")

    def lum(css):
        r, g, b = (int(v) for v in css[css.index("(") + 1:].split(")")[0].split(",")[:3])
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    if scheme == "dark":
        assert lum(app_bg) < 80 and lum(note_bg) < 80  # the note box follows the dark theme
    else:
        assert lum(note_bg) > 200
    assert abs(lum(fg) - lum(bg)) > 100  # key badges readable
    # Streamlit's Deploy button is not shown (client.toolbarMode = "viewer")
    assert page.get_by_role("button", name="Deploy").count() == 0
    shot(page, f"12_review_{scheme}")
    page.context.close()


def settle(page, timeout: float = 30_000) -> None:
    """Wait until Streamlit has no script run in progress (its status widget is gone)."""
    page.wait_for_timeout(300)  # the rerun the last action triggers has started by now
    page.locator("[data-testid='stStatusWidget']").wait_for(state="detached", timeout=timeout)


def test_import_uploader_starts_empty_after_an_import(browser, app, tmp_path):
    from deid_core.corpus import document_to_dict
    from deid_core.synthetic import generate_notes

    good = tmp_path / "good.jsonl"
    good.write_text("\n".join(json.dumps(document_to_dict(d)) for d in generate_notes(2, seed=78))
                    + "\n", "utf-8")
    page = sign_in(browser, app, "ada")
    page.get_by_role("link", name="Import").click()
    page.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(str(good))
    page.get_by_text("good.jsonl").first.wait_for(timeout=30_000)
    page.get_by_role("button", name="Import", exact=True).click()
    page.get_by_text("Imported 2 notes with").wait_for(timeout=60_000)  # not the job's "imported 2 notes, ..."
    # the uploader starts empty again
    page.get_by_text("good.jsonl").first.wait_for(state="detached", timeout=30_000)
    assert page.get_by_role("button", name="Import", exact=True).is_disabled()
    # a .jsonl picked as plain text is refused by name, nothing imported
    page.get_by_role("combobox", name="Format").click()
    page.get_by_role("option", name="txt: Plain text notes").click()
    # The format change reruns the page; a file given to the uploader before that rerun
    # ends lands in the widget the rerun replaces. Wait for the run to finish first.
    settle(page)
    page.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(str(good))
    page.get_by_text("good.jsonl").first.wait_for(timeout=30_000)
    page.get_by_role("button", name="Import", exact=True).click()
    error = page.get_by_text("Nothing was imported")
    error.wait_for(timeout=30_000)
    assert "good.jsonl" in error.inner_text() and "jsonl format" in error.inner_text()
    page.context.close()


# ---------------------------------------------------------------- the queue table's own search


def test_queue_table_search_finds_a_note_id(browser, app):
    # Streamlit's toolbar search (Glide Data Grid) finds note ids and database ids, but it
    # only counts and highlights a match until Enter jumps to it: a match below the visible
    # rows looks like nothing was found. The page's "Find a note" box filters the rows.
    page = sign_in(browser, app, "val")
    grid = page.locator("[data-testid='stDataFrame']")
    grid.wait_for(timeout=30_000)
    page.wait_for_timeout(500)
    found = re.compile(r"^[1-9][0-9]* results?$")  # the count, while nothing is selected yet
    for query in ("next-val", str(app["ids"]["misses"])):  # a note id, a database id
        grid.hover()
        page.get_by_role("button", name="Search").click()  # the table's toolbar search
        page.keyboard.type(query)
        bar = page.locator(".gdg-search-bar")
        bar.get_by_text(found).first.wait_for(timeout=10_000)
        page.keyboard.press("Enter")  # jump to the first match
        bar.get_by_text("1 of").first.wait_for(timeout=10_000)
        page.keyboard.press("Escape")
    page.context.close()


# ---------------------------------------------------------------- the next note, held ahead
# Last in the module: "Review next" claims the least confident notes (and two ahead), which
# the tests above open by link.

NEXT_NOW = """() => {
  const before = document.querySelector('.deid-review').dataset.doc;
  (document.activeElement || document.body).dispatchEvent(
      new KeyboardEvent("keydown", {key: "a", bubbles: true, cancelable: true}));
  const root = document.querySelector('.deid-review');
  return [before, root.dataset.doc, root.dataset.ahead];
}"""


def test_accept_shows_the_next_note_at_once_and_keeps_edits_made_before_the_save(browser, app):
    from deid_core.store import repository as repo
    from deid_core.store.engine import open_store

    page = sign_in(browser, app, "uma", context=None)
    page.get_by_role("button", name="Review next").click()
    page.locator('.deid-review[data-queued="2"] .deid-note').wait_for(timeout=30_000)
    page.locator(".deid-review .deid-note").focus()
    # A: the next note is on screen in the same event, before any server reply
    first, shown, ahead = page.evaluate(NEXT_NOW)
    assert shown != first and ahead == "1"
    n_spans = int(page.locator(".deid-review").get_attribute("data-spans"))
    page.keyboard.press("Tab")
    page.keyboard.press("Delete")  # an edit on the note shown ahead, before the server's run
    # the server saves the first note and adopts the shown one without dropping the edit
    page.get_by_text("Saved note").first.wait_for(timeout=30_000)
    page.locator(f'.deid-review[data-doc="{shown}"][data-ahead="0"]').wait_for(timeout=30_000)
    assert int(page.locator(".deid-review").get_attribute("data-spans")) == n_spans - 1
    assert page.get_by_test_id("deid-dirty").inner_text() == "yes"
    saved, _ = layer(app, int(first))
    assert saved.status == "reviewed" and saved.updated_by == "uma"
    # B still goes back to the accepted note and reopens it
    page.locator(".deid-review .deid-note").focus()
    page.keyboard.press("b")
    page.get_by_text("Reopened the previous note").wait_for(timeout=30_000)
    editor(page, first)
    back, _ = layer(app, int(first))
    assert back.status == "in_review" and back.assigned_to == "uma"
    # Someone saves the reopened note meanwhile: the next accept moves on at once, and the
    # conflict then brings the note back with its error, nothing lost
    engine = open_store(app["url"])
    try:
        result = repo.save_review(engine, int(first), "boss", back.document.spans, back.version)
        assert result.ok
    finally:
        engine.dispose()
    page.locator(".deid-review .deid-note").focus()
    page.keyboard.press("a")
    page.get_by_text("Not saved").first.wait_for(timeout=30_000)
    editor(page, first)
    assert page.locator(".deid-review").get_attribute("data-ahead") == "0"
    page.context.close()
