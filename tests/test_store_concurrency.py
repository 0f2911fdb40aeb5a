"""Many reviewers saving at once: every accepted save is stored, every conflict is reported, none lost."""

from __future__ import annotations

import threading
from collections import defaultdict

from people import add_users
from sqlalchemy import select

from deid_core.spans import Document, Span
from deid_core.store import repository as repo
from deid_core.store.models import Annotation, Review, ReviewDraft

N_THREADS = 10
ROUNDS = 6


def test_concurrent_review_saves(store) -> None:  # type: ignore[no-untyped-def]
    add_users(store, reviewers=tuple(f"u{w}" for w in range(N_THREADS)))
    repo.create_project(store, "c")
    docs = [Document(f"d{i}", f"Note {i}: Alex Moss, seen on ward {i}.") for i in range(4)]
    repo.import_documents(store, "c", docs)
    ids = [repo.find_document(store, "c", d.id) for d in docs]
    # Threads 0-5 fight over document 0; the others spread over documents 1-3.
    targets = {w: ids[0] if w < 6 else ids[1 + w % 3] for w in range(N_THREADS)}
    barrier = threading.Barrier(N_THREADS)
    outcomes: dict[int, list[tuple[str, object, tuple[Span, ...]]]] = defaultdict(list)
    errors: list[BaseException] = []

    def worker(w: int) -> None:
        try:
            barrier.wait()
            for r in range(ROUNDS):
                doc_id = targets[w]
                opened = repo.get_document(store, doc_id)
                mine = (Span(9, 13, f"W{w}R{r}", f"human:u{w}"),)
                result = repo.save_review(store, doc_id, f"u{w}", mine, opened.version)
                outcomes[w].append(("saved" if result.ok else "conflict", result, mine))
        except BaseException as exc:  # noqa: BLE001 - surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(N_THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    assert all(len(outcomes[w]) == ROUNDS for w in range(N_THREADS))

    saved_by_doc: dict[int, dict[int, tuple[Span, ...]]] = defaultdict(dict)
    conflicts = []
    for w, items in outcomes.items():
        for kind, result, mine in items:
            if kind == "saved":
                assert isinstance(result, repo.ReviewSaved)
                # Two writers can never both be granted the same version.
                assert result.version not in saved_by_doc[result.doc_id]
                saved_by_doc[result.doc_id][result.version] = mine
            else:
                assert isinstance(result, repo.ReviewConflict)
                assert result.changed_by is not None and result.current_version > result.base_version
                conflicts.append((w, result, mine))

    assert conflicts, "six writers on one document should have collided at least once"
    with store.connect() as conn:
        for doc_id, versions in saved_by_doc.items():
            final = repo.get_document(store, doc_id)
            # Versions 1..N each come from exactly one accepted save: no update was lost.
            assert sorted(versions) == list(range(1, final.version + 1))
            for version, mine in versions.items():
                stored = conn.execute(
                    select(Annotation.start_char, Annotation.end_char, Annotation.label)
                    .where(Annotation.document_id == doc_id, Annotation.doc_version == version)
                ).all()
                assert [tuple(row) for row in stored] == [s.key for s in mine]
        n_saved_reviews = len(conn.execute(
            select(Review.id).where(Review.outcome == "saved")).all())
        assert n_saved_reviews == sum(len(v) for v in saved_by_doc.values())
        drafts = {
            row.id: row
            for row in conn.execute(
                select(ReviewDraft.id, ReviewDraft.author, ReviewDraft.spans)
            )
        }
    # Every conflict was reported to its writer, with that writer's spans kept as a draft.
    assert len(drafts) == len(conflicts)
    for w, result, mine in conflicts:
        draft = drafts[result.draft_id]
        assert draft.author == f"u{w}"
        assert [(s["start"], s["end"], s["label"]) for s in draft.spans] == [s.key for s in mine]


def test_concurrent_claims_never_share_a_document(store) -> None:  # type: ignore[no-untyped-def]
    add_users(store, reviewers=tuple(f"u{w}" for w in range(N_THREADS)))
    repo.create_project(store, "q")
    repo.import_documents(store, "q", [Document(f"d{i}", f"note number {i}") for i in range(30)])
    barrier = threading.Barrier(N_THREADS)
    claimed: dict[int, list[int]] = defaultdict(list)
    errors: list[BaseException] = []

    def worker(w: int) -> None:
        try:
            barrier.wait()
            while True:
                got = repo.claim_next(store, "q", f"u{w}", resume=False)
                if got is None:
                    return
                claimed[w].append(got.doc_id)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(N_THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    everything = [d for docs in claimed.values() for d in docs]
    assert len(everything) == 30 and len(set(everything)) == 30
    rows = repo.review_queue(store, "q", statuses=["in_review"], limit=100)
    owner = {d: f"u{w}" for w, docs in claimed.items() for d in docs}
    assert all(r.assigned_to == owner[r.doc_id] for r in rows) and len(rows) == 30
