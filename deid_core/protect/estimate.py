"""How much PHI automatic de-identification leaves behind: an estimate with an interval.

An IRB asks what fraction of PHI an unreviewed export still holds. Reviewed
notes answer it: each keeps the model's prediction as it was before review and
the reviewer's final spans, so the PHI characters the model missed are known
there. Their mean, per 1,000 notes, estimates the missed-PHI rate of the same
model at the same bias on the notes nobody reviewed, with a 95% bootstrap
interval over documents (documents, not characters, are the independent
units: misses cluster in notes), bias-corrected and accelerated (BCa), because
misses are rare and lumpy and a plain percentile interval is too optimistic.

The estimate is only as good as the sample: notes reviewed because the model
was least confident are harder than the rest, so their rate overstates the
unreviewed notes' rate (a conservative bias). An *audit sample* of notes drawn
at random from the unreviewed ones (``draw_audit_sample``, queued for review
under the strategy ``audit``) gives an unbiased sample; ``estimate_project``
uses only audited notes when asked to. The stopping rule says when the upper
bound of the interval is under the admin's target.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from deid_core.spans import Span
from deid_core.store.authz import SYSTEM, Actor

AUDIT_STRATEGY = "audit"
DEFAULT_BOOTSTRAP = 2000


def missed_chars(predicted: Iterable[Span], final: Iterable[Span]) -> int:
    """Characters inside the final (reviewed) spans that no predicted span covers."""
    covered: set[int] = set()
    for s in predicted:
        covered.update(range(s.start, s.end))
    total = 0
    for s in final:
        total += sum(1 for i in range(s.start, s.end) if i not in covered)
    return total


@dataclass(frozen=True)
class MissedEstimate:
    """Missed PHI characters per 1,000 notes, with a bootstrap interval."""

    per_1000_notes: float
    low: float
    high: float
    level: float
    documents: int
    missed_chars: int
    phi_chars: int
    bootstrap: int
    sample: str  # "reviewed" or "audit"

    @property
    def char_recall(self) -> float | None:
        return 1 - self.missed_chars / self.phi_chars if self.phi_chars else None

    def below(self, target: float) -> bool:
        """The stopping rule: the interval's upper bound is under ``target``."""
        return self.documents > 0 and self.high < target

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"char_recall": self.char_recall}


def estimate_missed(
    per_document: Sequence[int],
    *,
    phi_chars: int = 0,
    level: float = 0.95,
    n_boot: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
    sample: str = "reviewed",
) -> MissedEstimate:
    """The mean of ``per_document`` missed characters x 1,000, with a BCa bootstrap
    interval (resampling documents with replacement)."""
    x = np.asarray(per_document, dtype=float)
    n = len(x)
    if n == 0:
        return MissedEstimate(0.0, 0.0, float("inf"), level, 0, 0, phi_chars, n_boot, sample)
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, n, size=(n_boot, n))].mean(axis=1)
    low, high = _bca(x, means, level)
    return MissedEstimate(
        round(float(x.mean()) * 1000, 3), round(float(low) * 1000, 3), round(float(high) * 1000, 3),
        level, n, int(x.sum()), phi_chars, n_boot, sample,
    )


def _bca(x: np.ndarray, means: np.ndarray, level: float) -> tuple[float, float]:
    """Bias-corrected and accelerated bootstrap interval of the mean (Efron 1987).

    Misses are rare and lumpy (most notes miss nothing, a few miss a whole
    name), so the plain percentile interval's upper bound falls below the truth
    too often; BCa's acceleration (from the jackknife) corrects for that skew.
    """
    from scipy.stats import norm

    n = len(x)
    alpha = (1 - level) / 2
    if n < 2 or np.all(x == x[0]):
        return float(np.quantile(means, alpha)), float(np.quantile(means, 1 - alpha))
    est = x.mean()
    prop = np.clip(np.mean(means < est), 1 / (len(means) + 1), 1 - 1 / (len(means) + 1))
    z0 = norm.ppf(prop)
    jack = (x.sum() - x) / (n - 1)
    d = jack.mean() - jack
    denom = 6 * (d**2).sum() ** 1.5
    a = (d**3).sum() / denom if denom else 0.0
    out = []
    for z in (norm.ppf(alpha), norm.ppf(1 - alpha)):
        q = norm.cdf(z0 + (z0 + z) / (1 - a * (z0 + z)))
        out.append(float(np.quantile(means, q)))
    return out[0], out[1]


# --------------------------------------------------------------------------- from the store


def reviewed_pairs(engine: Any, project: str, *, audit_only: bool = False) -> list[tuple[list[Span], list[Span]]]:
    """``(prediction before review, final spans)`` for each reviewed note that has a prediction.

    The prediction is the one the reviewed layer's accepted spans point to
    (``Annotation.prediction_id``), else the earliest recorded for the note: a
    prediction made after the review could come from a model trained on it.
    """
    from sqlalchemy import select

    from deid_core.store.engine import read_session
    from deid_core.store.models import Annotation, DocumentRow, PredictionRow, Project, QueueScore
    from deid_core.store.repository import spans_from_json

    out = []
    with read_session(engine) as s:
        proj = s.scalars(select(Project).where(Project.name == project)).one()
        q = select(DocumentRow).where(DocumentRow.project_id == proj.id, DocumentRow.status == "reviewed")
        if audit_only:
            q = q.join(QueueScore, QueueScore.document_id == DocumentRow.id).where(
                QueueScore.strategy == AUDIT_STRATEGY, QueueScore.project_id == proj.id
            )
        for doc in s.scalars(q.order_by(DocumentRow.id)):
            anns = s.scalars(
                select(Annotation).where(Annotation.document_id == doc.id, Annotation.doc_version == doc.version)
            ).all()
            preds = s.scalars(
                select(PredictionRow).where(PredictionRow.document_id == doc.id).order_by(PredictionRow.id)
            ).all()
            if not preds:
                continue
            linked = {a.prediction_id for a in anns if a.prediction_id is not None}
            pred = next((p for p in preds if p.id in linked), preds[0])
            # Rejected predictions are kept in the reviewed layer as a record, not as PHI.
            final = [Span(a.start_char, a.end_char, a.label, a.source, a.score) for a in anns
                     if a.decision != "rejected"]
            out.append((list(spans_from_json(pred.spans)), final))
    return out


def estimate_project(
    engine: Any, project: str, *, audit_only: bool = False, seed: int = 0, n_boot: int = DEFAULT_BOOTSTRAP
) -> MissedEstimate:
    pairs = reviewed_pairs(engine, project, audit_only=audit_only)
    missed = [missed_chars(p, f) for p, f in pairs]
    phi = sum(len(s) for _, f in pairs for s in f)
    return estimate_missed(missed, phi_chars=phi, seed=seed, n_boot=n_boot,
                           sample="audit" if audit_only else "reviewed")


def draw_audit_sample(engine: Any, project: str, n: int, *, seed: int, actor: Actor = SYSTEM) -> list[int]:
    """Draw ``n`` unreviewed notes at random and queue them for review (strategy ``audit``).

    Their reviews make an unbiased sample for ``estimate_project(audit_only=True)``.
    Earlier audit draws that are still unreviewed stay in the sample.
    """
    from sqlalchemy import select

    from deid_core.store.engine import read_session
    from deid_core.store.models import DocumentRow, Project, QueueScore
    from deid_core.store.repository import UNREVIEWED, set_queue_scores

    with read_session(engine) as s:
        proj = s.scalars(select(Project).where(Project.name == project)).one()
        ids = s.scalars(
            select(DocumentRow.id).where(DocumentRow.project_id == proj.id, DocumentRow.status.in_(UNREVIEWED))
            .order_by(DocumentRow.id)
        ).all()
        previous = dict(s.execute(
            select(QueueScore.document_id, QueueScore.score).where(
                QueueScore.project_id == proj.id, QueueScore.strategy == AUDIT_STRATEGY)
        ).all())
    rng = np.random.default_rng(seed)
    fresh = [i for i in ids if i not in previous]
    chosen = [int(i) for i in rng.choice(fresh, size=min(n, len(fresh)), replace=False)] if fresh else []
    scores = dict(previous) | {i: 1.0 for i in chosen}
    set_queue_scores(engine, project, AUDIT_STRATEGY, scores, actor=actor)
    return sorted(chosen)
