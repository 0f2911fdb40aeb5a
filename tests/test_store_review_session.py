"""Store support for browser-side editing: autosaved drafts, reopening an accepted note,
and the time spent per note in the audit."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from people import add_users

from deid_core.errors import InvalidSpan
from deid_core.spans import Document, Span
from deid_core.store import repository as repo
from deid_core.store.audit import list_events

TEXT = "Seen by Dr. Ann Lee on 09/14/2067."


@pytest.fixture
def doc(store):
    add_users(store, reviewers=("rita", "sam"))
    repo.create_project(store, "p")
    repo.import_documents(store, "p", [Document("n1", TEXT)])
    layers = repo.claim_next(store, "p", "rita")
    return store, layers.doc_id


def test_autosave_keeps_one_open_draft_per_note_and_author_until_saved(doc):
    engine, doc_id = doc
    first = repo.autosave_draft(engine, doc_id, "rita", [Span(12, 15, "DOCTOR", "human:rita")], 0)
    again = repo.autosave_draft(engine, doc_id, "rita", [Span(12, 19, "DOCTOR", "human:rita")], 0)
    assert first == again
    (draft,) = repo.list_drafts(engine, doc_id=doc_id, author="rita")
    assert draft.reason == "autosave" and [s.key for s in draft.spans] == [(12, 19, "DOCTOR")]
    with pytest.raises(InvalidSpan, match="ends past the text"):  # refused, named
        repo.autosave_draft(engine, doc_id, "rita", [Span(12, 999, "DOCTOR")], 0)
    started = datetime.now(timezone.utc) - timedelta(seconds=42)
    saved = repo.save_review(engine, doc_id, "rita", draft.spans, 0, started_at=started)
    assert saved.ok and repo.list_drafts(engine, doc_id=doc_id, author="rita") == []
    (event,) = list_events(engine, action="review.save")
    assert 41 <= event.after["seconds"] <= 60  # time spent on the note, in the audit


def test_reopen_undoes_an_accept_for_its_reviewer_only(doc):
    engine, doc_id = doc
    repo.save_review(engine, doc_id, "rita", [Span(12, 19, "DOCTOR", "human:rita")], 0)
    assert repo.reopen(engine, doc_id, "sam") is False
    assert repo.reopen(engine, doc_id, "rita") is True
    layers = repo.get_document(engine, doc_id)
    assert layers.status == "in_review" and layers.assigned_to == "rita" and layers.version == 1
    assert [s.key for s in layers.document.spans] == [(12, 19, "DOCTOR")]  # history kept
    assert list_events(engine, action="document.reopen")[0].actor == "rita"
    again = repo.save_review(engine, doc_id, "rita", [], 1)
    assert again.ok and again.version == 2
