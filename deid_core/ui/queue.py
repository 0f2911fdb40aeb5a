"""Queue and workflow helpers the pages call: table rows, patient notes, re-prediction.

The two read-only queries here (latest prediction summary per note, notes of
one patient) fill gaps the repository API leaves for display purposes; they
return plain values, never ORM objects or note text.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.engine import Engine

from deid_core.errors import DeidError
from deid_core.spans import Document
from deid_core.store import repository as repo
from deid_core.store.authz import SYSTEM, Actor
from deid_core.store.engine import read_session
from deid_core.store.models import DocumentRow, PredictionRow
from deid_core.store.repository import PredictionInput, QueueRow
from deid_core.store.rule_feedback import with_project_rules

Progress = Callable[[str, float], None]

# The default first: log P per predicted span ranks notes by their F1 best on
# MEDDOCAN and English dev notes (docs/active.md "Queue order"); the raw
# log-probability (paper 002) stays an option and a column.
QUEUE_ORDERS = {
    "logprob_span": "Least confident first (log-probability per predicted span)",
    "logprob": "Least confident note first (document log-probability)",
    "logprob_norm": "Least confident per token first",
    "id": "Import order",
}


def prediction_summaries(engine: Engine, doc_ids: Iterable[int]) -> dict[int, tuple[int, str]]:
    """Number of predicted spans and model version of each note's latest prediction."""
    ids = list(doc_ids)
    if not ids:
        return {}
    with read_session(engine) as s:
        latest = (
            select(PredictionRow.document_id, func.max(PredictionRow.id).label("pid"))
            .where(PredictionRow.document_id.in_(ids))
            .group_by(PredictionRow.document_id)
            .subquery()
        )
        rows = s.execute(
            select(PredictionRow.document_id, PredictionRow.spans, PredictionRow.model_version)
            .join(latest, PredictionRow.id == latest.c.pid)
        ).all()
    return {int(d): (len(spans or []), str(v)) for d, spans, v in rows}


def patient_document_ids(engine: Engine, project_id: int, patient_id: str) -> list[int]:
    with read_session(engine) as s:
        return [
            int(i)
            for i in s.scalars(
                select(DocumentRow.id)
                .where(DocumentRow.project_id == project_id, DocumentRow.patient_id == patient_id)
                .order_by(DocumentRow.id)
            )
        ]


def queue_table(rows: Sequence[QueueRow], summaries: dict[int, tuple[int, str]]) -> list[dict[str, Any]]:
    """One dict per row for ``st.dataframe``: ids, numbers and names only."""
    out = []
    for r in rows:
        n_spans, version = summaries.get(r.doc_id, (None, None))
        out.append(
            {
                "id": r.doc_id,
                "note": r.external_id,
                "status": r.status,
                "log P / span": None if r.logprob_span is None else round(r.logprob_span, 3),
                "log P": None if r.logprob is None else round(r.logprob, 2),
                "log P / token": None if r.logprob_norm is None else round(r.logprob_norm, 4),
                "PHI spans": n_spans,
                "chars": r.n_chars,
                "model": version,
                "assigned to": r.assigned_to or "",
                "last reviewer": (r.updated_by or "") if r.status == "reviewed" else "",
                "patient": r.patient_id,
            }
        )
    return out


def find_rows(table: Sequence[dict[str, Any]], query: str) -> list[dict[str, Any]]:
    """Rows whose database id, note id or patient id contains ``query`` (case-insensitive).

    The table's own search box looks at rendered cells only and missed note ids a
    reviewer typed; this matches on the identifiers themselves.
    """
    needle = query.strip().lower()
    if not needle:
        return list(table)
    keys = ("id", "note", "patient")
    return [r for r in table if any(needle in str(r.get(k) or "").lower() for k in keys)]


STATUS_ORDER = ("reviewed", "in_review", "new", "skipped")
STATUS_COLOURS = ("#2b8a3e", "#1c7ed6", "#868e96", "#e8590c")


def progress_frame(counts: dict[str, int]) -> list[dict[str, Any]]:
    """One row per status, every status present (zero included) and in a fixed order."""
    return [{"status": s, "notes": int(counts.get(s, 0))} for s in STATUS_ORDER]


def queue_orders(engine: Engine, project: Any) -> dict[str, str]:
    """The orders the Queue page offers, best first.

    The project's active-learning order leads only once its strategy has scored
    notes; before that it would list nothing, and a reviewer would open the app
    on an empty queue.
    """
    orders = dict(QUEUE_ORDERS)
    # An audit sample drawn on the Export page (random unreviewed notes) leads while it lasts.
    if repo.review_queue(engine, project.name, order="strategy:audit", statuses=["new", "in_review"], limit=1):
        orders = {"strategy:audit": "Audit sample (random notes for the PHI-left estimate)", **orders}
    strategy = project.settings.get("strategy")
    if not strategy:
        return orders
    key, label = f"strategy:{strategy}", f"Active learning: {strategy}"
    scored = repo.review_queue(engine, project.name, order=key, statuses=["new", "in_review"], limit=1)
    if scored:
        return {key: label, **orders}
    orders[key] = f"{label} (not scored yet)"
    return orders


def progress_numbers(counts: dict[str, int]) -> tuple[int, int]:
    """(reviewed, total), skipped notes counting as not reviewed."""
    total = sum(counts.values())
    return counts.get("reviewed", 0), total


def predict_unreviewed(
    engine: Engine,
    project: str,
    model: Any,
    *,
    model_version: str,
    model_version_id: int | None,
    bias: float,
    progress: Progress | None = None,
    batch_size: int = 100,
    actor: Actor = SYSTEM,
) -> int:
    """Re-predict every unreviewed note with ``model`` at ``bias`` and store it (chunked).

    The project's demoted rules tag nothing on their own (``with_project_rules``).
    ``actor`` (an admin) is checked by the store; ``SYSTEM`` is in-process code (the demo).
    """
    return predict_notes(
        engine, project, model, repo.unreviewed_documents(engine, project, batch_size=batch_size),
        total=repo.count_documents(engine, project, statuses=repo.UNREVIEWED),
        model_version=model_version, model_version_id=model_version_id, bias=bias,
        progress=progress, actor=actor,
    )


def predict_notes(
    engine: Engine,
    project: str,
    model: Any,
    notes: Iterable[tuple[int, Document]],
    *,
    total: int,
    model_version: str,
    model_version_id: int | None,
    bias: float,
    progress: Progress | None = None,
    actor: Actor = SYSTEM,
) -> int:
    """Predict ``(stored id, note)`` pairs with ``model`` at ``bias`` and store the predictions."""
    model = with_project_rules(model, repo.get_project(engine, project).settings)
    done = 0

    def items() -> Any:
        nonlocal done
        for doc_id, doc in notes:
            pred = model.predict(doc, bias=bias)
            done += 1
            if progress is not None and total:
                progress(f"predicted {done} of {total} notes", min(done / total, 1.0) * 0.99)
            yield PredictionInput(
                doc_id, tuple(pred.spans), model_version, float(pred.logprob),
                float(pred.logprob_per_token), int(pred.n_tokens), float(bias), model_version_id,
            )

    # Materialise first: the reader streams in its own transactions, and SQLite
    # would otherwise hold a read open while the writer commits chunks.
    pending = list(items())
    n = repo.record_predictions(engine, pending, total=len(pending), actor=actor)
    if progress is not None:
        progress(f"stored {n} predictions", 1.0)
    return n


def _claim(engine: Engine, project_id: int, doc_id: int, reviewer: str) -> bool:
    """Assign one new, unassigned note; the guarded UPDATE makes a concurrent claim lose cleanly."""
    from sqlalchemy import update

    from deid_core.store.audit import record_event
    from deid_core.store.authz import check
    from deid_core.store.engine import write_session
    from deid_core.store.models import utcnow

    with write_session(engine) as s:
        reviewer = check(s, reviewer, "reviewer", "claim a note")
        res = s.execute(
            update(DocumentRow)
            .where(DocumentRow.id == doc_id, DocumentRow.project_id == project_id,
                   DocumentRow.status == "new", DocumentRow.assigned_to.is_(None))
            .values(assigned_to=reviewer, assigned_at=utcnow(), status="in_review")
            .execution_options(synchronize_session=False)
        )
        if res.rowcount != 1:
            return False
        record_event(s, reviewer, "document.claim", "document", doc_id, project_id=project_id,
                     after={"assigned_to": reviewer, "order": "strategy"})
        return True


def claim_next_note(
    engine: Engine, project: Any, reviewer: str, *, exclude: Sequence[int] = ()
) -> repo.DocumentLayers | None:
    """"Review next": the reviewer's open note, else the next by the project's strategy.

    Notes of the audit sample (``protect.estimate.draw_audit_sample``) come
    first. When active learning has scored the queue (``settings["strategy"]``
    with scores stored through ``set_queue_scores``) the best-scored unassigned
    note is claimed; otherwise, or once scored notes run out, the store's
    least-confident-first claim is used. ``exclude`` names notes the reviewer
    holds that must not be returned (the Review page claims the note after the
    open one ahead of time, so the browser can show it the moment the open one
    is accepted).
    """
    skip = {int(i) for i in exclude}
    mine = [r for r in repo.review_queue(engine, project.name, statuses=["in_review"],
                                         assigned_to=reviewer, limit=len(skip) + 1)
            if r.doc_id not in skip]
    if mine:
        return repo.get_document(engine, mine[0].doc_id)
    strategy = project.settings.get("strategy")
    # The audit sample first: its reviews make the unbiased missed-PHI estimate.
    for order in ["strategy:audit"] + ([f"strategy:{strategy}"] if strategy else []):
        for _attempt in range(5):
            rows = repo.review_queue(engine, project.name, order=order,
                                     statuses=["new"], unassigned_only=True, limit=10)
            if not rows:
                break
            for row in rows:
                if _claim(engine, project.id, row.doc_id, reviewer):
                    return repo.get_document(engine, row.doc_id)
    # resume=False: the reviewer's own open notes were looked at (and some excluded) above.
    return repo.claim_next(engine, project.name, reviewer, resume=False)


def hold_ahead(
    engine: Engine, project: Any, reviewer: str, open_id: int, held_ids: Sequence[int], n: int
) -> list[repo.DocumentLayers]:
    """The ``n`` notes after the open one, claimed for ``reviewer`` ahead of time.

    Notes already held (``held_ids``, from earlier runs) are kept while the
    reviewer still holds them in this project; the rest are claimed with
    ``claim_next_note``, so the browser can show the next note the moment the
    open one is accepted.
    """
    held: list[repo.DocumentLayers] = []
    for ahead_id in held_ids:
        try:
            note = repo.get_document(engine, int(ahead_id))
        except DeidError:
            continue
        if (note.project_id == project.id and note.doc_id != open_id
                and note.status == "in_review" and note.assigned_to == reviewer):
            held.append(note)
    while len(held) < n:
        claimed = claim_next_note(engine, project, reviewer, exclude=(open_id, *(h.doc_id for h in held)))
        if claimed is None:
            break
        held.append(claimed)
    return held
