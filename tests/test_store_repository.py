"""Repository API on SQLite and PostgreSQL: CRUD, constraints, queue, reviews, drafts, models, audit."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from argon2 import PasswordHasher
from people import add_users
from sqlalchemy import delete, insert, select, text, update
from sqlalchemy.exc import DBAPIError, IntegrityError

from deid_core.errors import AlreadyExists, CorpusFormatError, InvalidSpan, NotFound, StoreError
from deid_core.spans import Document, Span
from deid_core.store import repository as repo
from deid_core.store import users
from deid_core.store.audit import list_events
from deid_core.store.models import Annotation, AuditEvent, DocumentRow, User


def notes(n: int, prefix: str = "n") -> list[Document]:
    """Tiny distinct notes, each with one PATIENT span at 4..13."""
    return [
        Document(f"{prefix}{i}", f"Pt. Alex Moss {i} seen today.", (Span(4, 13, "PATIENT"),),
                 {"patient_id": f"P{i % 3}"})
        for i in range(n)
    ]


@pytest.fixture
def project(store):  # type: ignore[no-untyped-def]
    add_users(store, admins=("admin",), reviewers=("alice", "bob", "carol"))
    repo.create_project(store, "demo", lang="en", scheme="i2b2_2014", actor="admin")
    return "demo"


def test_project_crud(store) -> None:  # type: ignore[no-untyped-def]
    add_users(store, admins=("ana",))
    info = repo.create_project(store, "p1", lang="es", scheme="meddocan", actor="ana")
    assert info.settings["bias"] == 0.0
    assert repo.get_project(store, "p1").lang == "es"
    with pytest.raises(AlreadyExists):
        repo.create_project(store, "p1")
    updated = repo.update_project_settings(store, "p1", {"bias": 1.5}, actor="ana")
    assert updated.settings["bias"] == 1.5 and updated.settings["retrain_every"] == 20
    assert [p.name for p in repo.list_projects(store)] == ["p1"]
    with pytest.raises(NotFound):
        repo.get_project(store, "nope")


@pytest.mark.parametrize(
    "kwargs,fragment",
    [({"lang": "fr"}, "unsupported language"), ({"scheme": "nope"}, "unknown label scheme")],
)
def test_project_validation(store, kwargs, fragment) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(Exception, match=fragment):
        repo.create_project(store, "bad", **kwargs)
    assert repo.list_projects(store) == []


@pytest.mark.parametrize("mode", ["none", "gold", "predictions"])
def test_import_modes(store, project, mode) -> None:  # type: ignore[no-untyped-def]
    res = repo.import_documents(store, project, notes(4), annotations=mode, actor="admin")
    assert res.n_imported == 4 and res.n_duplicates == 0
    doc_id = repo.find_document(store, project, "n1")
    layers = repo.get_document(store, doc_id)
    assert layers.document.text == "Pt. Alex Moss 1 seen today."
    assert layers.document.meta["patient_id"] == "P1"
    if mode == "gold":
        assert layers.status == "reviewed" and layers.version == 1
        assert [s.key for s in layers.document.spans] == [(4, 13, "PATIENT")]
        assert [d.id for d in repo.reviewed_corpus(store, project)] == ["n0", "n1", "n2", "n3"]
    else:
        assert layers.status == "new" and layers.version == 0 and layers.document.spans == ()
        assert list(repo.reviewed_corpus(store, project)) == []
    if mode == "predictions":
        assert layers.prediction is not None
        assert [s.key for s in layers.prediction.spans] == [(4, 13, "PATIENT")]
        assert layers.prediction.spans[0].source == "import"
    else:
        assert layers.prediction is None


def test_import_duplicates_are_skipped_and_reported(store, project) -> None:  # type: ignore[no-untyped-def]
    repo.import_documents(store, project, notes(3))
    again = notes(5)  # n0..n2 same text as before, n3/n4 new
    copy = Document("copy-of-n4", again[4].text)
    res = repo.import_documents(store, project, [*again, copy])
    assert res.n_imported == 2
    assert [(d.external_id, d.existing_external_id) for d in res.duplicates] == [
        ("n0", "n0"), ("n1", "n1"), ("n2", "n2"), ("copy-of-n4", "n4")
    ]
    assert repo.count_documents(store, project) == 5


def test_import_is_all_or_nothing(store, project) -> None:  # type: ignore[no-untyped-def]
    def stream():  # type: ignore[no-untyped-def]
        yield from notes(5)
        raise CorpusFormatError("broken line", path="x.jsonl", line=6)

    with pytest.raises(CorpusFormatError, match="line 6"):
        repo.import_documents(store, project, stream(), chunk_size=2)
    assert repo.count_documents(store, project) == 0
    # A reused id for a different text is an error, and also rolls back.
    repo.import_documents(store, project, notes(1))
    with pytest.raises(CorpusFormatError, match="already used"):
        repo.import_documents(store, project, [Document("zz", "new text"), Document("n0", "x")])
    assert repo.count_documents(store, project) == 1


def test_import_progress(store, project) -> None:  # type: ignore[no-untyped-def]
    seen: list[float] = []
    repo.import_documents(store, project, notes(5), total=5, chunk_size=2,
                          progress=lambda _m, f: seen.append(f))
    assert seen == sorted(seen) and seen[-1] == 1.0 and len(seen) >= 3


@pytest.mark.parametrize(
    "start,end",
    [(-1, 3), (5, 5), (7, 2)],
)
def test_db_check_constraints_on_annotations(store, project, start, end) -> None:  # type: ignore[no-untyped-def]
    repo.import_documents(store, project, notes(1))
    doc_id = repo.find_document(store, project, "n0")
    with pytest.raises(IntegrityError), store.begin() as conn:
        conn.execute(insert(Annotation).values(
            document_id=doc_id, doc_version=1, start_char=start, end_char=end, label="X",
            source="human:a", score=1.0, author="a", decision="added"))


@pytest.mark.parametrize(
    "values",
    [{"status": "done"}, {"version": -1}],
)
def test_db_check_constraints_on_documents(store, project, values) -> None:  # type: ignore[no-untyped-def]
    repo.import_documents(store, project, notes(1))
    with pytest.raises(IntegrityError), store.begin() as conn:
        conn.execute(update(DocumentRow).values(**values))


def test_foreign_keys_enforced(store) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(IntegrityError), store.begin() as conn:
        conn.execute(insert(DocumentRow).values(
            project_id=999, external_id="x", text="t", sha256="0" * 64, n_chars=1, meta={},
            status="new", version=0))


def test_library_checks_span_fits_text(store, project) -> None:  # type: ignore[no-untyped-def]
    repo.import_documents(store, project, notes(1))
    doc_id = repo.find_document(store, project, "n0")
    n = len(notes(1)[0].text)
    with pytest.raises(InvalidSpan, match="ends past the text"):
        repo.save_review(store, doc_id, "alice", [Span(0, n + 1, "PATIENT")], 0)
    with pytest.raises(InvalidSpan, match="overlap"):
        repo.save_review(store, doc_id, "alice", [Span(0, 5, "A"), Span(3, 8, "B")], 0)
    with pytest.raises(InvalidSpan, match="ends past the text"):
        repo.record_prediction(store, doc_id, [Span(0, n + 1, "PATIENT")], model_version="m")
    assert repo.get_document(store, doc_id).version == 0  # nothing half-written


def _predict(store, project, logprobs):  # type: ignore[no-untyped-def]
    for ext, lp in logprobs.items():
        doc_id = repo.find_document(store, project, ext)
        repo.record_prediction(store, doc_id, [Span(4, 13, "PATIENT", "crf:v1", 0.9)],
                               model_version="crf:v1", logprob=lp, n_tokens=8)


def test_review_queue_order_and_filters(store, project) -> None:  # type: ignore[no-untyped-def]
    repo.import_documents(store, project, notes(6))
    _predict(store, project, {"n0": -1.0, "n1": -9.0, "n2": -4.0, "n3": -0.5})
    q = repo.review_queue(store, project)
    assert [r.external_id for r in q] == ["n1", "n2", "n0", "n3", "n4", "n5"]  # unpredicted last
    assert q[0].logprob == -9.0 and q[0].logprob_norm == pytest.approx(-9.0 / 8)
    assert [r.external_id for r in repo.review_queue(store, project, limit=2, offset=1)] == [
        "n2", "n0"]
    claimed = repo.claim_next(store, project, "alice")
    assert claimed is not None and claimed.document.id == "n1"
    assert [r.external_id for r in repo.review_queue(store, project, statuses=["in_review"])] == [
        "n1"]
    mine = repo.review_queue(store, project, assigned_to="alice")
    assert [r.external_id for r in mine] == ["n1"]
    assert "n1" not in [r.external_id for r in repo.review_queue(store, project, unassigned_only=True)]
    assert repo.status_counts(store, project) == {"new": 5, "in_review": 1, "reviewed": 0,
                                                  "skipped": 0}
    with pytest.raises(StoreError):
        repo.review_queue(store, project, statuses=["bogus"])


def test_default_order_is_logprob_per_predicted_span(store, project) -> None:  # type: ignore[no-untyped-def]
    # n0: log P -6 over 5 spans (-1 per span); n1: log P -4 over 1 span (-2 per span).
    # The raw log-probability puts n0 first; the default (per span) puts n1 first.
    repo.import_documents(store, project, notes(3))
    spans = [Span(k, k + 1, "PATIENT", "crf:v1", 0.9) for k in range(0, 10, 2)]
    for ext, lp, sp in (("n0", -6.0, spans), ("n1", -4.0, spans[:1])):
        repo.record_prediction(store, repo.find_document(store, project, ext), sp,
                               model_version="crf:v1", logprob=lp, n_tokens=8)
    q = repo.review_queue(store, project)
    assert [r.external_id for r in q] == ["n1", "n0", "n2"]  # unpredicted last
    assert q[0].logprob_span == pytest.approx(-2.0) and q[1].logprob_span == pytest.approx(-1.0)
    assert [r.external_id for r in repo.review_queue(store, project, order="logprob")] == ["n0", "n1", "n2"]
    claimed = repo.claim_next(store, project, "alice")
    assert claimed is not None and claimed.document.id == "n1"
    assert repo.claim_next(store, project, "bob", order="logprob").document.id == "n0"
    with pytest.raises(StoreError, match="logprob_span"):
        repo.review_queue(store, project, order="bogus")


def test_imported_predictions_carry_logprob_per_span(store, project) -> None:  # type: ignore[no-untyped-def]
    text = "Patient John Smith seen."
    doc = Document("p0", text, (Span(8, 12, "PATIENT", "crf:v0", 0.8), Span(13, 18, "PATIENT", "crf:v0", 0.8)),
                   {"logprob": -3.0, "logprob_per_token": -0.75})
    repo.import_documents(store, project, [doc], annotations="predictions")
    (row,) = repo.review_queue(store, project)
    assert row.logprob == -3.0 and row.logprob_span == pytest.approx(-1.0)


def test_review_queue_strategy_hook(store, project) -> None:  # type: ignore[no-untyped-def]
    repo.import_documents(store, project, notes(4))
    ids = {e: repo.find_document(store, project, e) for e in ("n0", "n1", "n2", "n3")}
    repo.set_queue_scores(store, project, "entropy", {ids["n2"]: 0.9, ids["n0"]: 0.5,
                                                      ids["n3"]: 0.7}, model_version="crf:v1")
    q = repo.review_queue(store, project, order="strategy:entropy")
    assert [(r.external_id, r.score) for r in q] == [("n2", 0.9), ("n3", 0.7), ("n0", 0.5)]
    repo.set_queue_scores(store, project, "entropy", {ids["n1"]: 0.1})  # replaces
    assert [r.external_id for r in repo.review_queue(store, project, order="strategy:entropy")] == [
        "n1"]


def test_claim_next_resumes_and_exhausts(store, project) -> None:  # type: ignore[no-untyped-def]
    repo.import_documents(store, project, notes(2))
    a = repo.claim_next(store, project, "alice")
    again = repo.claim_next(store, project, "alice")
    assert a is not None and again is not None and a.doc_id == again.doc_id
    b = repo.claim_next(store, project, "bob")
    assert b is not None and b.doc_id != a.doc_id
    assert repo.claim_next(store, project, "carol") is None
    assert repo.release(store, b.doc_id, "bob")
    c = repo.claim_next(store, project, "carol")
    assert c is not None and c.doc_id == b.doc_id


def test_save_review_decisions_and_history(store, project) -> None:  # type: ignore[no-untyped-def]
    text = "Pt. Alex Moss seen 2067-05-03 at Mercy, call 555-0101."
    repo.import_documents(store, project, [Document("d", text)])
    doc_id = repo.find_document(store, project, "d")
    repo.record_prediction(store, doc_id, [
        Span(4, 13, "PATIENT", "crf:v1", 0.9),      # accepted
        Span(19, 29, "DATE", "rule:date", 0.95),    # relabelled -> modified
        Span(33, 38, "CITY", "crf:v1", 0.4),        # rejected
    ], model_version="crf:v1", logprob=-3.0, n_tokens=12)
    opened = repo.get_document(store, doc_id)
    started = datetime.now(timezone.utc) - timedelta(seconds=30)
    saved = repo.save_review(store, doc_id, "alice", [
        Span(4, 13, "PATIENT", "crf:v1", 0.9),
        Span(19, 29, "AGE", "human:alice"),
        Span(45, 53, "PHONE", "human:alice"),       # added
    ], opened.version, started_at=started)
    assert isinstance(saved, repo.ReviewSaved) and saved.version == 1
    assert saved.decisions == {"accepted": 1, "modified": 1, "added": 1, "rejected": 1}
    after = repo.get_document(store, doc_id)
    assert after.status == "reviewed" and after.updated_by == "alice"
    assert [s.key for s in after.document.spans] == [(4, 13, "PATIENT"), (19, 29, "AGE"),
                                                     (45, 53, "PHONE")]
    by_decision = {r.decision: r for r in after.annotations}
    assert by_decision["accepted"].span.source == "crf:v1"
    assert by_decision["modified"].predicted is not None
    assert by_decision["modified"].predicted.key == (19, 29, "DATE")
    assert by_decision["rejected"].span.key == (33, 38, "CITY")
    assert by_decision["added"].predicted is None and by_decision["added"].author == "alice"
    # A second save keeps the first layer as history.
    second = repo.save_review(store, doc_id, "bob", [Span(4, 13, "PATIENT", "crf:v1", 0.9)], 1)
    assert isinstance(second, repo.ReviewSaved) and second.version == 2
    with store.connect() as conn:
        versions = sorted(set(conn.execute(select(Annotation.doc_version).where(
            Annotation.document_id == doc_id)).scalars()))
    assert versions == [1, 2]
    assert [d.spans for d in repo.reviewed_corpus(store, project)][0][0].key == (4, 13, "PATIENT")


def test_conflict_keeps_draft_and_names_who(store, project) -> None:  # type: ignore[no-untyped-def]
    repo.import_documents(store, project, notes(1))
    doc_id = repo.find_document(store, project, "n0")
    base = repo.get_document(store, doc_id).version
    assert repo.save_review(store, doc_id, "alice", [Span(4, 13, "PATIENT")], base).ok
    mine = [Span(4, 8, "PATIENT", "human:bob"), Span(9, 13, "PATIENT", "human:bob")]
    conflict = repo.save_review(store, doc_id, "bob", mine, base)
    assert isinstance(conflict, repo.ReviewConflict)
    assert conflict.changed_by == "alice" and conflict.current_version == 1
    assert "changed by alice at" in conflict.message
    drafts = repo.list_drafts(store, author="bob")
    assert [d.id for d in drafts] == [conflict.draft_id]
    assert [s.key for s in drafts[0].spans] == [s.key for s in mine]
    # Reapply on the current version and close the draft in the same transaction.
    saved = repo.save_review(store, doc_id, "bob", drafts[0].spans, conflict.current_version,
                             draft_id=conflict.draft_id)
    assert isinstance(saved, repo.ReviewSaved) and saved.version == 2
    assert repo.list_drafts(store, author="bob") == []
    assert len(repo.list_drafts(store, author="bob", open_only=False)) == 1
    assert [e.action for e in list_events(store, entity_type="document", entity_id=doc_id)][:3] == [
        "review.save", "review.conflict", "review.save"]


def test_set_status_skip(store, project) -> None:  # type: ignore[no-untyped-def]
    repo.import_documents(store, project, notes(2))
    doc_id = repo.find_document(store, project, "n0")
    repo.set_status(store, doc_id, "skipped", actor="alice")
    assert [r.external_id for r in repo.review_queue(store, project)] == ["n1"]
    with pytest.raises(StoreError):
        repo.set_status(store, doc_id, "reviewed")
    # A reviewed note cannot be skipped: that would drop its reviewed layer from every export.
    other = repo.find_document(store, project, "n1")
    assert repo.save_review(store, other, "bob", [Span(4, 13, "PATIENT")], 0).ok
    with pytest.raises(StoreError) as refused:
        repo.set_status(store, other, "skipped", actor="alice")
    assert refused.value.code == "E_REVIEWED"
    assert repo.get_document(store, other).status == "reviewed"


def test_model_versions(store, project) -> None:  # type: ignore[no-untyped-def]
    assert repo.active_model_version(store, project) is None
    repo.register_model_version(store, project, version="v1", artifact_path="/m/v1",
                                n_train_docs=20, hyperparams={"c1": 0.1},
                                metrics={"f1": 0.8}, activate=True)
    v2 = repo.register_model_version(store, project, version="v2", artifact_path="/m/v2",
                                     parent="v1")
    assert v2.parent_version == "v1" and not v2.active
    assert repo.active_model_version(store, project).version == "v1"
    repo.activate_model_version(store, project, "v2")
    assert repo.active_model_version(store, project).version == "v2"
    assert [(m.version, m.active) for m in repo.list_model_versions(store, project)] == [
        ("v1", False), ("v2", True)]
    with pytest.raises(AlreadyExists):
        repo.register_model_version(store, project, version="v1", artifact_path="x")
    with pytest.raises(NotFound):
        repo.register_model_version(store, project, version="v3", artifact_path="x",
                                    parent="nope")


def test_audit_is_append_only(store, project) -> None:  # type: ignore[no-untyped-def]
    repo.import_documents(store, project, notes(2), actor="admin")
    events = list_events(store, project_id=repo.get_project(store, project).id)
    assert [e.action for e in events] == ["import", "project.create"]
    assert events[0].after["n_documents"] == 2
    for stmt in (update(AuditEvent).values(actor="mallory"), delete(AuditEvent)):
        with pytest.raises(DBAPIError, match="append-only"), store.begin() as conn:
            conn.execute(stmt)
    assert len(list_events(store)) == 2


def test_audit_never_holds_note_text(store, project) -> None:  # type: ignore[no-untyped-def]
    repo.import_documents(store, project, notes(1), annotations="predictions")
    doc_id = repo.find_document(store, project, "n0")
    repo.save_review(store, doc_id, "alice", [Span(4, 13, "PATIENT")], 0)
    repo.save_review(store, doc_id, "bob", [Span(4, 8, "PATIENT")], 0)
    with store.connect() as conn:
        dumped = " ".join(str(r) for r in conn.execute(select(AuditEvent)).all())
    assert "Alex" not in dumped and "Moss" not in dumped


def test_user_deactivation_and_deletion_keep_work(store, project, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(users, "_HASHER", PasswordHasher(time_cost=1, memory_cost=1024,
                                                         parallelism=1))
    users.create_user(store, "dora", "correct horse", role="reviewer", actor="admin")
    repo.import_documents(store, project, notes(1))
    doc_id = repo.find_document(store, project, "n0")
    assert repo.save_review(store, doc_id, "dora", [Span(4, 13, "PATIENT")], 0).ok
    users.deactivate_user(store, "dora", actor="admin")
    assert users.authenticate(store, "dora", "correct horse") is None
    assert [a.author for a in repo.get_document(store, doc_id).annotations] == ["dora"]
    with store.begin() as conn:  # even a hard delete of the account row touches no work
        conn.execute(delete(User).where(User.username == "dora"))
    layers = repo.get_document(store, doc_id)
    assert [a.author for a in layers.annotations] == ["dora"] and layers.updated_by == "dora"
    assert any(e.actor == "dora" for e in list_events(store))


def test_sqlite_pragmas(store) -> None:  # type: ignore[no-untyped-def]
    if store.dialect.name != "sqlite":
        pytest.skip("SQLite only")
    with store.connect() as conn:
        assert conn.execute(text("PRAGMA foreign_keys")).scalar() == 1
        assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"


def test_bulk_import_refreshes_planner_statistics(store, project, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A freshly bulk-loaded PostgreSQL table has no statistics and the queue stops using its
    index; imports above the threshold analyse right away."""
    calls: list[tuple[str, ...]] = []
    real = repo.refresh_statistics

    def spy(engine, tables):  # type: ignore[no-untyped-def]
        calls.append(tuple(tables))
        real(engine, tables)

    monkeypatch.setattr(repo, "refresh_statistics", spy)
    monkeypatch.setattr(repo, "ANALYZE_AFTER_ROWS", 5)
    repo.import_documents(store, project, notes(3))
    assert calls == []
    assert repo.import_documents(store, project, notes(9)).n_imported == 6
    assert calls and "documents" in calls[0]
    if store.dialect.name == "postgresql":
        with store.connect() as conn:
            assert conn.execute(text(
                "SELECT count(*) FROM pg_stats WHERE schemaname = current_schema()"
                " AND tablename = 'documents'")).scalar() > 0
