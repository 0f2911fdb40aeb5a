"""Queue helpers: claiming by strategy or least confident, table rows, re-prediction."""

from __future__ import annotations

import threading

import pytest
from app_support import PROJECT, seed_store
from people import add_users

from deid_core.store import repository as repo
from deid_core.ui.queue import (
    claim_next_note,
    prediction_summaries,
    progress_numbers,
    queue_orders,
    queue_table,
)


@pytest.fixture
def engine(db_url):
    return seed_store(db_url, n_notes=6)


def test_least_confident_first_without_a_strategy(engine):
    project = repo.get_project(engine, PROJECT)
    expected = [r.doc_id for r in repo.review_queue(engine, PROJECT)]
    got = claim_next_note(engine, project, "rita")
    assert got.doc_id == expected[0] and got.assigned_to == "rita"
    assert claim_next_note(engine, project, "rita").doc_id == expected[0]  # resumes her note
    assert claim_next_note(engine, project, "sam").doc_id == expected[1]


def test_claiming_ahead_excludes_the_notes_already_held(engine):
    # The Review page claims the notes after the open one ahead of time: never the open one
    # again, and the reviewer's own held notes before new ones.
    project = repo.get_project(engine, PROJECT)
    expected = [r.doc_id for r in repo.review_queue(engine, PROJECT)]
    first = claim_next_note(engine, project, "rita")
    second = claim_next_note(engine, project, "rita", exclude=(first.doc_id,))
    third = claim_next_note(engine, project, "rita", exclude=(first.doc_id, second.doc_id))
    assert [first.doc_id, second.doc_id, third.doc_id] == expected[:3]
    assert third.assigned_to == "rita" and third.status == "in_review"
    # held notes come back first when only the open one is excluded
    assert claim_next_note(engine, project, "rita", exclude=(first.doc_id,)).doc_id in expected[1:3]
    assert claim_next_note(engine, project, "sam").doc_id == expected[3]


def test_strategy_scores_order_the_claims(engine):
    ids = [r.doc_id for r in repo.review_queue(engine, PROJECT)]
    scores = {d: float(i) for i, d in enumerate(ids)}  # the MOST confident note scores highest
    repo.set_queue_scores(engine, PROJECT, "phi_mass", scores)
    repo.update_project_settings(engine, PROJECT, {"strategy": "phi_mass"})
    project = repo.get_project(engine, PROJECT)
    assert claim_next_note(engine, project, "rita").doc_id == ids[-1]
    assert claim_next_note(engine, project, "sam").doc_id == ids[-2]


def test_concurrent_claims_never_share_a_note(engine):
    ids = [r.doc_id for r in repo.review_queue(engine, PROJECT)]
    repo.set_queue_scores(engine, PROJECT, "entropy", {d: 1.0 for d in ids})
    repo.update_project_settings(engine, PROJECT, {"strategy": "entropy"})
    project = repo.get_project(engine, PROJECT)
    got: dict[str, int | None] = {}

    def worker(name: str) -> None:
        layers = claim_next_note(engine, project, name)
        got[name] = layers.doc_id if layers else None

    add_users(engine, reviewers=tuple(f"r{i}" for i in range(6)))
    threads = [threading.Thread(target=worker, args=(f"r{i}",)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    claimed = [v for v in got.values() if v is not None]
    assert len(claimed) == 6 and len(set(claimed)) == 6


def test_table_rows_and_progress(engine):
    rows = repo.review_queue(engine, PROJECT)
    table = queue_table(rows, prediction_summaries(engine, [r.doc_id for r in rows]))
    assert [t["id"] for t in table] == [r.doc_id for r in rows]
    assert all(t["PHI spans"] and t["model"] == "import" for t in table)
    assert table[0]["log P"] < table[-1]["log P"]
    assert progress_numbers({"new": 4, "reviewed": 2, "skipped": 1, "in_review": 0}) == (2, 7)


def test_strategy_order_leads_only_once_it_has_scores(engine):
    # A project whose strategy was chosen but never scored must not open on an empty queue.
    repo.update_project_settings(engine, PROJECT, {"strategy": "entropy"})
    orders = list(queue_orders(engine, repo.get_project(engine, PROJECT)))
    assert orders[0] != "strategy:entropy" and "strategy:entropy" in orders
    assert repo.review_queue(engine, PROJECT, order=orders[0], statuses=["new"])
    ids = [r.doc_id for r in repo.review_queue(engine, PROJECT)]
    repo.set_queue_scores(engine, PROJECT, "entropy", {d: float(i) for i, d in enumerate(ids)})
    assert list(queue_orders(engine, repo.get_project(engine, PROJECT)))[0] == "strategy:entropy"
