"""The estimate of PHI left by automatic de-identification (issue 14)."""

from __future__ import annotations

import pytest
from people import add_users

from deid_core.protect.estimate import (
    draw_audit_sample,
    estimate_missed,
    estimate_project,
    missed_chars,
)
from deid_core.spans import Span
from deid_core.store.repository import (
    create_project,
    get_document,
    import_documents,
    record_prediction,
    review_queue,
    save_review,
)
from deid_core.synthetic import generate_notes


@pytest.mark.parametrize(
    ("predicted", "final", "missed"),
    [
        ([], [(0, 5)], 5),
        ([(0, 5)], [(0, 5)], 0),
        ([(0, 3)], [(0, 5)], 2),  # a span cut short leaves its tail
        ([(10, 20)], [(0, 5)], 5),
        ([(0, 2), (3, 5)], [(0, 5), (8, 9)], 2),
        ([(0, 9)], [], 0),  # false positives miss nothing
    ],
)
def test_missed_chars(predicted, final, missed) -> None:  # type: ignore[no-untyped-def]
    assert missed_chars([Span(a, b, "X") for a, b in predicted], [Span(a, b, "X") for a, b in final]) == missed


def test_toy_corpus_with_a_known_answer() -> None:
    # 10 notes: 8 clean, one missed 10 characters, one missed 30: 4,000 per 1,000 notes.
    est = estimate_missed([0] * 8 + [10, 30], phi_chars=400, seed=1)
    assert est.per_1000_notes == 4000.0 and est.documents == 10 and est.missed_chars == 40
    assert 0 <= est.low < 4000 < est.high <= 30_000 * 2 / 10 * 1000 / 1000 * 1000
    assert est.char_recall == 0.9
    assert est.below(est.high + 1) and not est.below(est.high)
    nothing = estimate_missed([0] * 50)
    assert (nothing.per_1000_notes, nothing.low, nothing.high) == (0.0, 0.0, 0.0)
    assert not estimate_missed([]).below(1e9)  # no sample, no stopping


def test_estimate_and_audit_sample_from_the_store(store) -> None:  # type: ignore[no-untyped-def]
    notes = generate_notes(8, seed=3)
    add_users(store, admins=("admin",), reviewers=("ann", "bob"))
    create_project(store, "p", lang="en", scheme="i2b2_2014")
    import_documents(store, "p", notes, annotations="none")
    rows = review_queue(store, "p", order="id", limit=100)
    # The "model" found every gold span but the first of each note; a reviewer then fixed it.
    expected = []
    for row, doc in zip(rows[:4], notes[:4]):
        record_prediction(store, row.doc_id, list(doc.spans[1:]), model_version="m1")
        layers = get_document(store, row.doc_id)
        save_review(store, row.doc_id, "ann", list(doc.spans), layers.version)
        expected.append(len(doc.spans[0]))
    est = estimate_project(store, "p", seed=0)
    assert est.documents == 4 and est.missed_chars == sum(expected)
    assert est.per_1000_notes == pytest.approx(sum(expected) / 4 * 1000)
    drawn = draw_audit_sample(store, "p", 3, seed=5)
    assert len(drawn) == 3 and set(drawn) <= {r.doc_id for r in rows[4:]}
    queued = review_queue(store, "p", order="strategy:audit", limit=10)
    assert {r.doc_id for r in queued} == set(drawn)
    assert estimate_project(store, "p", audit_only=True).documents == 0  # none reviewed yet
    # "Review next" hands out the audit sample first; its reviews feed the audit estimate.
    from deid_core.store.repository import get_project
    from deid_core.ui.queue import claim_next_note, queue_orders

    info = get_project(store, "p")
    assert next(iter(queue_orders(store, info))) == "strategy:audit"
    claimed = claim_next_note(store, info, "bob")
    assert claimed is not None and claimed.doc_id in drawn
    doc = next(d for r, d in zip(rows, notes) if r.doc_id == claimed.doc_id)
    record_prediction(store, claimed.doc_id, list(doc.spans), model_version="m1")
    save_review(store, claimed.doc_id, "bob", list(doc.spans), get_document(store, claimed.doc_id).version)
    audit = estimate_project(store, "p", audit_only=True)
    assert audit.documents == 1 and audit.missed_chars == 0 and audit.sample == "audit"


def test_a_deleted_false_positive_is_not_counted_as_phi(store) -> None:  # type: ignore[no-untyped-def]
    """Rejected predictions stay in the reviewed layer as a record; they are not PHI the model found."""
    (note,) = generate_notes(1, seed=4)
    add_users(store, admins=("admin",), reviewers=("ann",))
    create_project(store, "p", lang="en", scheme="i2b2_2014")
    import_documents(store, "p", [note], annotations="none")
    (row,) = review_queue(store, "p", order="id", limit=10)
    gold = sorted(note.spans, key=lambda sp: sp.start)
    free = next(i for i in range(len(note.text) - 8)
                if all(sp.end <= i or sp.start >= i + 8 for sp in gold))
    false_positive = Span(free, free + 8, gold[0].label)
    # The model missed the first gold span and tagged 8 characters that are not PHI.
    record_prediction(store, row.doc_id, [*gold[1:], false_positive], model_version="m1")
    save_review(store, row.doc_id, "ann", gold, get_document(store, row.doc_id).version)
    layers = get_document(store, row.doc_id)
    assert any(r.decision == "rejected" for r in layers.annotations)
    est = estimate_project(store, "p", seed=0)
    phi = sum(len(sp) for sp in gold)
    assert est.missed_chars == len(gold[0])
    assert est.char_recall == pytest.approx(1 - len(gold[0]) / phi)
