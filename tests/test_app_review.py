"""Queue and Review pages: review next, save a review, see a conflict and keep the edits."""

from __future__ import annotations

import pytest
from app_support import PROJECT, app_as, seed_store, texts

from deid_core.engine.tokenize import tokenize
from deid_core.spans import Span
from deid_core.store import repository as repo
from deid_core.ui.editing import apply_action

_SEQ = iter(range(1, 10**6))


def send(at, doc_id, kind, spans=None):
    """What the review component sends: the layer it edited locally, and what to do with it."""
    layer = at.session_state["drafts"][doc_id].spans if spans is None else spans
    at.session_state["review_editor"] = {"action": {
        "type": kind, "doc_id": str(doc_id), "seq": next(_SEQ),
        "spans": [{"s": s.start, "e": s.end, "l": s.label, "src": s.source, "sc": s.score}
                  for s in layer]}}
    return at.run()


@pytest.fixture
def engine(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'app.db'}"
    engine = seed_store(url, n_notes=4)
    monkeypatch.setenv("DEID_DATABASE_URL", url)
    return engine


def claim(username):
    """Queue page, "Review next", then stay on the Review page for the following runs."""
    at = app_as(username, page="queue")
    at.button(key="review_next").click().run()
    at.switch_page("pages/review.py").run()
    return at


def least_confident(engine):
    return repo.review_queue(engine, PROJECT, limit=1)[0]


def test_review_next_opens_the_least_confident_note_and_never_twice(engine):
    first = least_confident(engine)
    rita = app_as("rita", page="queue")
    assert texts(rita.title) == ["Review queue"] and not rita.exception
    rita.button(key="review_next").click().run()
    assert not rita.exception
    assert rita.session_state["current_doc"] == first.doc_id
    assert texts(rita.title) == [f"Note {first.external_id}"]
    sam = app_as("sam", page="queue")
    sam.button(key="review_next").click().run()
    assert sam.session_state["current_doc"] not in (None, first.doc_id)


def test_save_review_with_an_edit_then_next(engine):
    rita = claim("rita")
    doc_id = rita.session_state["current_doc"]
    layers = repo.get_document(engine, doc_id)
    text = layers.document.text
    # What the component sends when the reviewer selects a word and presses a key:
    word = tokenize(text).tokens[0]
    state = rita.session_state["drafts"][doc_id]
    edited = apply_action(state, {"type": "add", "start": word.start, "end": word.end,
                                  "label": "PATIENT"}, tokenize(text).tokens, "rita", ["PATIENT"])
    send(rita, doc_id, "draft", edited.spans)  # the autosave a moment after the edit
    assert rita.session_state["drafts"][doc_id].dirty
    (draft,) = repo.list_drafts(engine, doc_id=doc_id, author="rita")
    assert draft.reason == "autosave" and word.start in {s.start for s in draft.spans}
    send(rita, doc_id, "accept")
    assert not rita.exception
    saved = repo.get_document(engine, doc_id)
    assert saved.status == "reviewed" and saved.version == 1
    assert Span(word.start, word.end, "PATIENT").key in {s.key for s in saved.document.spans}
    assert any(s.startswith("Saved note") for s in texts(rita.success))
    assert rita.session_state["current_doc"] not in (None, doc_id)  # moved on
    counts = repo.status_counts(engine, PROJECT)
    assert counts["reviewed"] == 1


def test_conflict_is_shown_and_edits_are_kept(engine):
    rita = claim("rita")
    doc_id = rita.session_state["current_doc"]
    # sam opens the same note (e.g. from the queue table) and saves first
    sam = app_as("sam", page="review")
    sam.session_state["current_doc"] = doc_id
    sam.run()
    send(sam, doc_id, "save")
    assert repo.get_document(engine, doc_id).version == 1
    # rita deletes a span and saves on the version she opened
    state = rita.session_state["drafts"][doc_id]
    first = state.spans[0]
    edited = apply_action(state, {"type": "delete", "start": first.start, "end": first.end},
                          (), "rita", [])
    send(rita, doc_id, "save", edited.spans)
    assert not rita.exception
    errors = texts(rita.error)
    assert errors and "changed by sam" in errors[0] and "draft" in errors[0]
    assert repo.get_document(engine, doc_id).version == 1  # nothing overwritten
    drafts = [d for d in repo.list_drafts(engine, doc_id=doc_id, author="rita") if d.reason == "conflict"]
    assert len(drafts) == 1 and first.key not in {s.key for s in drafts[0].spans}
    assert rita.session_state["drafts"][doc_id].dirty  # the edit is still on screen
    # she keeps her edits and saves over sam's version
    rita.button(key="reapply").click().run()
    send(rita, doc_id, "save")
    after = repo.get_document(engine, doc_id)
    assert after.version == 2 and first.key not in {s.key for s in after.document.spans}
    assert repo.list_drafts(engine, doc_id=doc_id, author="rita") == []


def test_skip_and_release(engine):
    rita = claim("rita")
    doc_id = rita.session_state["current_doc"]
    send(rita, doc_id, "skip")
    assert repo.get_document(engine, doc_id).status == "skipped"
    nxt = rita.session_state["current_doc"]
    rita.button(key="release").click().run()
    assert repo.get_document(engine, nxt).status == "new"


def test_apply_to_all_previews_then_applies_across_the_patients_notes(engine):
    rita = claim("rita")
    doc_id = rita.session_state["current_doc"]
    layers = repo.get_document(engine, doc_id)
    patient = layers.document.meta["patient_id"]
    siblings = [r.doc_id for r in repo.review_queue(engine, PROJECT, statuses=["new"], limit=50)
                if r.patient_id == patient and r.doc_id != doc_id]
    text = layers.document.text
    word = next(t for t in tokenize(text).tokens if t.text.isalpha() and len(t.text) > 3
                and any(t.text in repo.get_document(engine, s).document.text for s in siblings))
    rita.selectbox(key="aa_pick").select("(type a string)").run()
    rita.text_input(key="aa_string").input(word.text)
    rita.selectbox(key="aa_label").select("PATIENT")
    rita.radio(key="aa_action").set_value("add")
    rita.radio(key="aa_scope").set_value("this patient's notes").run()
    rita.button(key="aa_preview").click().run()
    assert not rita.exception
    plan = rita.session_state["apply_all_plan"]["changes"]
    assert plan and {c.doc_id for c in plan} - {str(doc_id)}  # other notes would change
    assert all(text_of(engine, c) == word.text for c in plan)
    assert repo.get_document(engine, doc_id).version == 0  # a preview changes nothing
    rita.button(key="aa_apply").click().run()
    assert not rita.exception
    drafts = rita.session_state["drafts"]
    for c in plan:
        assert (c.start, c.end, "PATIENT") in {s.key for s in drafts[int(c.doc_id)].spans}


def text_of(engine, change):
    doc = repo.get_document(engine, int(change.doc_id)).document
    return doc.text[change.start:change.end]
