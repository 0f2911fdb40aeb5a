"""Pre-annotate a project's unreviewed notes with its active model and store the predictions.

The document log-probability (and its per-token form) goes with each
prediction and onto the document, which is what orders the review queue
(least confident first). By default notes already predicted by the active
model version are skipped, so re-running after an interruption resumes.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.engine import Engine

from deid_core.errors import StoreError
from deid_core.store.audit import record_event
from deid_core.store.authz import SYSTEM, Actor, actor_name, require
from deid_core.store.engine import read_session, write_session
from deid_core.store.models import PredictionRow
from deid_core.store.repository import (
    UNREVIEWED,
    PredictionInput,
    Progress,
    active_model_version,
    count_documents,
    get_project,
    record_predictions,
    unreviewed_documents,
)
from deid_core.store.rule_feedback import with_project_rules


@dataclass(frozen=True, slots=True)
class PredictQueueResult:
    model_version: str
    bias: float
    n_predicted: int
    n_skipped: int
    n_spans: int
    seconds: float


def predict_queue(
    engine: Engine,
    project: str,
    *,
    bias: float | None = None,
    redo: bool = False,
    limit: int | None = None,
    actor: Actor = SYSTEM,
    progress: Progress | None = None,
) -> PredictQueueResult:
    """Predict every new or in-review note with the project's active model version.

    ``bias`` defaults to the project's O-label bias setting; ``redo`` predicts
    notes that already have a prediction from this model version too.
    """
    from deid_core.engine.model import DeidModel  # numpy/crfsuite: only when predicting

    require(engine, actor, "admin", "pre-annotate the queue")
    info = get_project(engine, project)
    mv = active_model_version(engine, project)
    if mv is None:
        raise StoreError(
            f"project {project!r} has no active model version: train one and register it first"
        )
    # The project's demoted rules tag nothing on their own (deid_core.store.rule_feedback).
    model = with_project_rules(DeidModel.load(mv.artifact_path), info.settings)
    use_bias = float(info.settings.get("bias", 0.0)) if bias is None else float(bias)
    done: set[int] = set()
    if not redo:
        with read_session(engine) as s:
            done = set(s.scalars(select(PredictionRow.document_id)
                                 .where(PredictionRow.model_version_id == mv.id)))
    total = count_documents(engine, project, UNREVIEWED)
    todo = max(0, total - len(done)) if limit is None else min(limit, total)
    started = time.perf_counter()
    counts = {"predicted": 0, "skipped": 0, "spans": 0}

    def items() -> Iterator[PredictionInput]:
        for doc_id, doc in unreviewed_documents(engine, project):
            if doc_id in done:
                counts["skipped"] += 1
                continue
            if limit is not None and counts["predicted"] >= limit:
                return
            pred = model.predict(doc, use_bias)
            counts["predicted"] += 1
            counts["spans"] += len(pred.spans)
            yield PredictionInput(
                doc_id, pred.spans, mv.version, logprob=float(pred.logprob),
                logprob_norm=float(pred.logprob_per_token), n_tokens=pred.n_tokens,
                bias=use_bias, model_version_id=mv.id,
            )

    record_predictions(engine, items(), progress=progress, total=todo or None, chunk_size=50,
                       actor=actor)
    seconds = time.perf_counter() - started
    with write_session(engine) as s:
        record_event(s, actor_name(actor), "predict_queue", "project", info.id, project_id=info.id,
                     after={"model_version": mv.version, "bias": use_bias,
                            "n_predicted": counts["predicted"], "n_skipped": counts["skipped"]})
    if progress is not None:
        progress(f"predicted {counts['predicted']} notes", 1.0)
    return PredictQueueResult(mv.version, use_bias, counts["predicted"], counts["skipped"],
                              counts["spans"], round(seconds, 3))
