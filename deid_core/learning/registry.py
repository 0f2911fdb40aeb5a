"""Retraining policy: when to retrain, and whether a new model may replace the active one.

Paper 001's self-training keeps a new identifier only when it beats the
previous one, because mislabelled data silently accumulates otherwise. The
same holds for reviewer data: a retrain on a handful of odd notes can be worse.
So a candidate is evaluated on reviewed notes it was *not* trained on and
activated only if it is not worse than the active model beyond a tolerance,
on strict F1 and on character recall (recall first: a model that leaks more
PHI characters is never an improvement). A rejected candidate is kept with the
reason, and every decision is returned as a record for the audit log.

While few notes are reviewed a fixed held-out split would be tiny and noisy,
so the comparison is k-fold: both training procedures (the active model's
training set, the candidate's training set) are re-run without each fold and
scored on it. Once enough reviewed notes fall in the stable held-out split
(chosen by a hash of the document id, so it never changes as notes arrive),
both final models are scored on those notes, which no model trains on.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from deid_core.settings import SettingsPolicy
from deid_core.spans import Document

log = logging.getLogger(__name__)

Progress = Callable[[str, float], None]

__all__ = [
    "Comparison",
    "ComparisonPlan",
    "Decision",
    "RetrainPolicy",
    "RetrainResult",
    "compare",
    "decide",
    "evaluate_predictions",
    "is_heldout",
    "learning_curve",
    "plan_comparison",
    "retrain",
    "full_retrain_due",
    "retrain_due",
    "should_retrain",
    "should_retrain_full",
    "split_reviewed",
]


class TrainedModel(Protocol):
    def predict_many(self, docs: list[Document], bias: float = 0.0, progress: bool = False) -> list[Any]: ...


#: ``trainer(docs, progress) -> model``. A trainer may also offer
#: ``batch(docs, folds, progress) -> (model, [model without fold i, ...])``.
Trainer = Callable[[list[Document], "Progress | None"], Any]


@dataclass(frozen=True)
class RetrainPolicy(SettingsPolicy):
    """Project settings for retraining; stored in the project's settings JSON."""

    retrain_every: int = 20  # N, as the store's project default: retrain after N new reviews
    tolerance_f1: float = 0.005  # a candidate may be this much worse on strict F1 ...
    tolerance_recall: float = 0.002  # ... and on character recall, and still be activated
    heldout_share: int = 5  # one reviewed note in this many is held out (by id hash)
    min_heldout: int = 20  # from this many held-out notes they stop training; judged on once unseen
    folds: int = 3
    #: With at least this many reviewed notes the active model never trained
    #: on, the k-fold scores only those: the active model itself predicts them
    #: (it never saw them), so its training procedure need not be re-run.
    min_unseen: int = 10
    #: A drop beyond tolerance rejects the candidate only when a paired
    #: approximate-randomization test over the compared notes gives p below
    #: this (a few notes' noise is not "really worse"); None: every drop rejects.
    significance: float | None = 0.05
    significance_trials: int = 999
    #: How a candidate builds on the active model's training corpus
    #: (``deid_core.learning.retrain``): "augment" (feature augmentation,
    #: Daume 2007) or "duplicate" (reviewed notes repeated ``reviewed_weight`` times).
    adaptation: str = "augment"
    reviewed_weight: int = 1  # each reviewed note counts this many times in training
    #: crfsuite settings of the in-loop candidate (a round must stay short);
    #: None keeps the active model's own setting. 5 passes of ``pa`` scored as
    #: 10 did on the new-domain proxy and keep a k-fold round on the bundled
    #: starter's corpus under 30 s (docs/active.md, "Fast rounds").
    loop_algorithm: str | None = "pa"
    loop_iterations: int | None = 5
    #: The in-loop candidate trains on a fixed, seeded sample of the active
    #: model's corpus up to this many characters (None: all of it), so a
    #: round's cost no longer grows with the starter's corpus: on the bundled
    #: starter (792k characters) it halves a k-fold round for about a point of
    #: precision on the English challenge notes (docs/active.md, "Fast rounds").
    #: The full round trains on the whole corpus.
    loop_base_chars: int | None = 400_000
    #: The fast candidate trails an L-BFGS one a little (docs/active.md), so
    #: once this many notes were reviewed since the last L-BFGS candidate (the
    #: starter counts, with 0 reviews) the automatic round trains with
    #: ``full_algorithm`` instead. 0 turns the automatic full retrain off.
    full_every: int = 100
    full_algorithm: str = "lbfgs"
    full_iterations: int = 100

    def full(self) -> RetrainPolicy:
        """This policy with the full (slower, usually a little better) crfsuite settings."""
        return replace(self, loop_algorithm=self.full_algorithm, loop_iterations=self.full_iterations,
                       loop_base_chars=None)

    def __post_init__(self) -> None:
        if self.retrain_every < 1:
            raise ValueError(f"retrain_every must be >= 1, got {self.retrain_every}")
        if self.folds < 2:
            raise ValueError(f"folds must be >= 2, got {self.folds}")
        if self.heldout_share < 2:
            raise ValueError(f"heldout_share must be >= 2, got {self.heldout_share}")
        if self.tolerance_f1 < 0 or self.tolerance_recall < 0:
            raise ValueError("tolerances must be >= 0")
        if self.adaptation not in ("augment", "duplicate"):
            raise ValueError(f"adaptation must be 'augment' or 'duplicate', got {self.adaptation!r}")
        if self.reviewed_weight < 1:
            raise ValueError(f"reviewed_weight must be >= 1, got {self.reviewed_weight}")
        if self.full_every < 0:
            raise ValueError(f"full_every must be >= 0, got {self.full_every}")
        if self.full_iterations < 1:
            raise ValueError(f"full_iterations must be >= 1, got {self.full_iterations}")
        if self.loop_base_chars is not None and self.loop_base_chars < 1:
            raise ValueError(f"loop_base_chars must be >= 1 or None, got {self.loop_base_chars}")


def should_retrain(n_new_reviewed: int, policy: RetrainPolicy) -> bool:
    """True once N notes have been reviewed since the last retrain."""
    return n_new_reviewed >= policy.retrain_every


def should_retrain_full(n_since_full: int, policy: RetrainPolicy) -> bool:
    """True once ``full_every`` notes were reviewed since the last full-algorithm model."""
    return policy.full_every > 0 and n_since_full >= policy.full_every


def is_heldout(doc_id: str, share: int) -> bool:
    """Stable membership of the held-out split: the same note is always in or out."""
    digest = hashlib.sha1(doc_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:4], "big") % share == 0


def split_reviewed(
    docs: Sequence[Document], policy: RetrainPolicy
) -> tuple[list[Document], list[Document]]:
    """(train, held-out) by id hash."""
    train, held = [], []
    for d in docs:
        (held if is_heldout(d.id, policy.heldout_share) else train).append(d)
    return train, held


# --------------------------------------------------------------------------- scoring


def model_bias(model: Any, bias: float | str) -> float:
    """``bias`` for ``model``: a number as given; ``"recall"``, the model's own recorded recall bias.

    A project that follows the model's recall bias means "the operating point
    each model version measured to reach the recall target", not a number: a
    margin-trained candidate is sharper than the starter, so at the starter's
    number it finds less (docs/active.md, session 12).
    """
    from deid_core.engine.recall_bias import resolve_bias

    return resolve_bias(bias, getattr(model, "metadata", {}), f"model {getattr(model, 'version', '?')}")


def predict_documents(model: Any, docs: Sequence[Document], bias: float | str = 0.0) -> list[Document]:
    """Model output at ``bias`` (see :func:`model_bias`) as documents, for the metric functions."""
    preds = model.predict_many(list(docs), model_bias(model, bias))
    return [p.to_document(d) for p, d in zip(preds, docs)]


def evaluate_predictions(gold: Sequence[Document], pred: Sequence[Document]) -> dict[str, float]:
    """The two numbers every decision rests on: strict micro F1 and character recall."""
    from deid_core.evaluation import char_prf, strict_prf

    strict = strict_prf(list(gold), list(pred))
    char = char_prf(list(gold), list(pred))
    return {
        "strict_f1": float(strict["f1"]),
        "strict_precision": float(strict["precision"]),
        "strict_recall": float(strict["recall"]),
        "char_recall": float(char["recall"]),
        "char_precision": float(char["precision"]),
        "n_docs": len(gold),
    }


@dataclass(frozen=True)
class Comparison:
    """Candidate and active scored on the same notes, neither having trained on them."""

    method: str  # "kfold" | "heldout" | "none"
    n_docs: int
    candidate: dict[str, float]
    active: dict[str, float] | None
    eval_ids: tuple[str, ...] = ()
    #: two-sided p of candidate vs active per decision metric (paired by note)
    p_values: dict[str, float] | None = None


@dataclass(frozen=True)
class Decision:
    accepted: bool
    reason: str
    comparison: Comparison

    def to_audit(self) -> dict[str, Any]:
        """Audit event payload: ids and numbers only, no note text."""
        c = self.comparison
        return {
            "decision": "activated" if self.accepted else "rejected",
            "reason": self.reason,
            "method": c.method,
            "n_eval_docs": c.n_docs,
            "candidate": dict(c.candidate),
            "active": dict(c.active) if c.active is not None else None,
            "p_values": dict(c.p_values) if c.p_values is not None else None,
        }


def decide(
    candidate: Mapping[str, float],
    active: Mapping[str, float] | None,
    policy: RetrainPolicy,
    p_values: Mapping[str, float] | None = None,
) -> tuple[bool, str]:
    """Accept unless the candidate is really worse than the active model.

    Character recall is judged first (a model that leaks more PHI characters
    is no improvement), then strict F1. A drop beyond the tolerance rejects;
    with ``p_values`` (paired test, see ``policy.significance``) only a drop
    that is also significant does, and a non-significant one is named in the reason.
    """
    if active is None:
        return True, "no active model: the first model is activated"
    df1 = candidate["strict_f1"] - active["strict_f1"]
    drec = candidate["char_recall"] - active["char_recall"]
    figures = (
        f"char recall {candidate['char_recall']:.4f} vs {active['char_recall']:.4f},"
        f" strict F1 {candidate['strict_f1']:.4f} vs {active['strict_f1']:.4f}"
    )
    problems, noise = [], []
    for name, metric, drop, tol in (
        ("character recall", "char_recall", -drec, policy.tolerance_recall),
        ("strict F1", "strict_f1", -df1, policy.tolerance_f1),
    ):
        if drop <= tol:
            continue
        p = p_values.get(metric) if (p_values is not None and policy.significance is not None) else None
        if p is None:
            problems.append(f"{name} dropped by {drop:.4f} (tolerance {tol})")
        elif p < policy.significance:
            problems.append(f"{name} dropped by {drop:.4f} (tolerance {tol}, p = {p:.3f})")
        else:
            noise.append(f"{name} -{drop:.4f}, p = {p:.3f}")
    if problems:
        return False, "rejected: " + "; ".join(problems) + f" [{figures}]"
    if noise:
        verdict = "not significantly worse (" + "; ".join(noise) + f"; significance {policy.significance})"
    else:
        verdict = "better" if df1 > 0 or drec > 0 else "not worse beyond tolerance"
    return True, f"activated: {verdict} [{figures}]"


def _p_values(
    gold: Sequence[Document], cand: Sequence[Document], act: Sequence[Document], policy: RetrainPolicy
) -> dict[str, float] | None:
    """Paired approximate-randomization p of the two decision metrics (documents swapped)."""
    if policy.significance is None or not gold:
        return None
    from deid_core.evaluation.significance import approximate_randomization

    return {
        metric: float(approximate_randomization(
            list(gold), list(cand), list(act), metric=metric, trials=policy.significance_trials,
        )["p_value"])
        for metric in ("char_recall", "strict_f1")
    }


def _folds(docs: Sequence[Document], k: int) -> list[list[Document]]:
    """Deterministic folds: notes ordered by id hash, dealt round-robin."""
    ordered = sorted(docs, key=lambda d: hashlib.sha1(d.id.encode("utf-8")).hexdigest())
    k = min(k, len(ordered))
    return [ordered[i::k] for i in range(k)]


def _scale(progress: Progress | None, lo: float, hi: float) -> Progress | None:
    if progress is None:
        return None
    return lambda msg, frac: progress(msg, lo + (hi - lo) * max(0.0, min(1.0, frac)))


@dataclass(frozen=True)
class ComparisonPlan:
    """Which notes a round compares on, fixed before the candidate trains.

    Known up front, so a trainer that can (``batch``) trains the candidate
    and its k-fold stand-ins together.
    """

    method: str  # "heldout" | "kfold" | "kfold-unseen" | "none"
    docs: tuple[Document, ...] = ()  # the held-out notes, or the k-fold pool
    folds: tuple[tuple[Document, ...], ...] = ()


def plan_comparison(
    reviewed: Sequence[Document],
    *,
    candidate_train_ids: set[str],
    active_model: Any | None,
    active_train_ids: set[str] | None,
    policy: RetrainPolicy,
) -> ComparisonPlan:
    active_ids = active_train_ids or set()
    unseen_heldout = [
        d
        for d in reviewed
        if is_heldout(d.id, policy.heldout_share)
        and d.id not in candidate_train_ids
        and d.id not in active_ids
    ]
    if len(unseen_heldout) >= policy.min_heldout:
        return ComparisonPlan("heldout", tuple(unseen_heldout))
    pool = [d for d in reviewed if d.id in candidate_train_ids]
    if len(pool) < 2:
        return ComparisonPlan("none")
    method, scored = "kfold", pool
    unseen = [d for d in pool if d.id not in active_ids]
    if active_model is not None and active_ids and len(unseen) >= policy.min_unseen:
        # Paired on the notes the active model never saw: it predicts them as it
        # stands, and only the candidate's procedure is re-run without each fold.
        method, scored = "kfold-unseen", unseen
    return ComparisonPlan(method, tuple(pool), tuple(tuple(f) for f in _folds(scored, policy.folds)))


def compare(
    reviewed: Sequence[Document],
    *,
    trainer: Trainer,
    candidate_model: Any,
    candidate_train_ids: set[str],
    active_model: Any | None,
    active_train_ids: set[str] | None,
    active_trainer: Trainer | None = None,
    policy: RetrainPolicy,
    progress: Progress | None = None,
    plan: ComparisonPlan | None = None,
    fold_models: Sequence[Any] | None = None,
    bias: float | str = 0.0,
) -> Comparison:
    """Score candidate against active on reviewed notes neither was trained on, at the project's ``bias``.

    ``trainer``/``active_trainer`` rebuild each model's training procedure for
    the k-fold comparison; ``active_trainer`` defaults to ``trainer`` (the
    difference is then the training data, which is the usual case).
    ``fold_models`` are the candidate's stand-ins for ``plan``'s folds when
    they were trained already (with the candidate, by ``trainer.batch``).
    """
    active_ids = active_train_ids or set()
    if plan is None:
        plan = plan_comparison(reviewed, candidate_train_ids=candidate_train_ids, active_model=active_model,
                               active_train_ids=active_train_ids, policy=policy)
    if plan.method == "heldout":
        unseen_heldout = list(plan.docs)
        cand_docs = predict_documents(candidate_model, unseen_heldout, bias)
        cand = evaluate_predictions(unseen_heldout, cand_docs)
        act, p_values = None, None
        if active_model is not None:
            act_docs = predict_documents(active_model, unseen_heldout, bias)
            act = evaluate_predictions(unseen_heldout, act_docs)
            p_values = _p_values(unseen_heldout, cand_docs, act_docs, policy)
        if progress:
            progress("held-out comparison done", 1.0)
        return Comparison("heldout", len(unseen_heldout), cand, act, tuple(d.id for d in unseen_heldout),
                          p_values)
    if plan.method == "none":
        return Comparison("none", 0, {}, None)

    method, pool, folds = plan.method, list(plan.docs), [list(f) for f in plan.folds]
    gold: list[Document] = []
    cand_pred: list[Document] = []
    act_pred: list[Document] = []
    active_trainer = active_trainer or trainer
    for i, fold in enumerate(folds):
        fold_ids = {d.id for d in fold}
        rest = [d for d in pool if d.id not in fold_ids]
        act_rest = [d for d in rest if d.id in active_ids]
        lo, hi = i / len(folds), (i + 1) / len(folds)
        cand_fold = fold_models[i] if fold_models is not None else trainer(rest, _scale(progress, lo, (lo + hi) / 2))
        gold.extend(fold)
        cand_pred.extend(predict_documents(cand_fold, fold, bias))
        if active_model is None:
            continue
        if method == "kfold-unseen":
            act_pred.extend(predict_documents(active_model, fold, bias))
        elif act_rest:
            act_fold = active_trainer(act_rest, _scale(progress, (lo + hi) / 2, hi))
            act_pred.extend(predict_documents(act_fold, fold, bias))
        else:
            # Nothing of the active model's training data is outside this fold,
            # so its procedure cannot be re-run; the active model itself stands
            # in. It may have seen the fold, which favours keeping it: the safe side.
            act_pred.extend(predict_documents(active_model, fold, bias))
        log.info("k-fold comparison: fold %d/%d (%d eval notes)", i + 1, len(folds), len(fold))
    return Comparison(
        method,
        len(gold),
        evaluate_predictions(gold, cand_pred),
        evaluate_predictions(gold, act_pred) if active_model is not None else None,
        tuple(d.id for d in gold),
        _p_values(gold, cand_pred, act_pred, policy) if active_model is not None else None,
    )


# --------------------------------------------------------------------------- one retrain


@dataclass
class RetrainResult:
    model: Any
    decision: Decision
    train_ids: list[str]
    seconds: float
    n_train_tokens: int = 0
    metrics: dict[str, Any] = field(default_factory=dict)


def retrain(
    reviewed: Sequence[Document],
    *,
    trainer: Trainer,
    active_model: Any | None = None,
    active_train_ids: set[str] | None = None,
    active_trainer: Trainer | None = None,
    policy: RetrainPolicy | None = None,
    progress: Progress | None = None,
    lang: str = "en",
    bias: float | str = 0.0,
) -> RetrainResult:
    """Train a candidate on the reviewed notes and decide whether it replaces the active model.

    Both models are scored at ``bias``, the project's O-label bias: the
    operating point the project tags at is the one that must not get worse.
    ``"recall"`` scores each model at its own recorded recall bias.

    Pure apart from training: the caller records the returned decision (the
    store as a ModelVersion row and an audit event) and activates the model.
    """
    from deid_core.engine.tokenize import tokenize

    policy = policy or RetrainPolicy()
    t0 = time.perf_counter()
    # Notes in the held-out split never train a model once there are enough of
    # them to judge by; before that every reviewed note is training data. Counted
    # whether or not the active model saw them: an active model from the k-fold
    # rounds trained on the held-out notes too, and waiting for enough unseen ones
    # would keep every later round a k-fold one (a training per fold, each with
    # the starter's whole corpus). The first candidate that leaves them out is
    # still judged by k-fold; once it is active, the held-out notes are unseen
    # and each round trains once.
    train_part, held = split_reviewed(reviewed, policy)
    train_docs = list(train_part) if len(held) >= policy.min_heldout else list(reviewed)
    if not train_docs:
        raise ValueError("no reviewed documents to train on")
    train_ids = {d.id for d in train_docs}
    plan = plan_comparison(reviewed, candidate_train_ids=train_ids, active_model=active_model,
                           active_train_ids=active_train_ids, policy=policy)
    batch = getattr(trainer, "batch", None)
    fold_models = None
    if plan.folds and batch is not None:
        # The candidate and its k-fold stand-ins from one feature extraction and crfsuite data set.
        candidate, fold_models = batch(train_docs, [list(f) for f in plan.folds], _scale(progress, 0.0, 0.8))
    else:
        candidate = trainer(train_docs, _scale(progress, 0.0, 0.4))
    train_seconds = time.perf_counter() - t0
    comparison = compare(
        reviewed,
        trainer=trainer,
        candidate_model=candidate,
        candidate_train_ids=train_ids,
        active_model=active_model,
        active_train_ids=active_train_ids,
        active_trainer=active_trainer,
        policy=policy,
        progress=_scale(progress, 0.8 if fold_models is not None else 0.4, 1.0),
        plan=plan,
        fold_models=fold_models,
        bias=bias,
    )
    if comparison.method == "none":
        accepted, reason = True, (
            "too few reviewed notes to compare: activated"
            if active_model is not None
            else "no active model: the first model is activated"
        )
    else:
        accepted, reason = decide(comparison.candidate, comparison.active, policy, comparison.p_values)
    decision = Decision(accepted, reason, comparison)
    n_tokens = sum(len(tokenize(d.text, lang).tokens) for d in train_docs)
    metrics = {
        "n_reviewed": len(reviewed),
        "n_train_docs": len(train_docs),
        "n_train_tokens": n_tokens,
        "train_seconds": round(train_seconds, 3),
        "evaluation": decision.to_audit(),
        "compared_at_bias": bias if isinstance(bias, str) else float(bias),
    }
    if isinstance(bias, str):
        metrics["compared_at_biases"] = {
            "candidate": model_bias(candidate, bias),
            "active": model_bias(active_model, bias) if active_model is not None else None,
        }
    log.info(
        "retrain: %d notes, %s (%s)", len(train_docs), "activated" if accepted else "rejected", comparison.method
    )
    if progress:
        progress(reason, 1.0)
    return RetrainResult(
        candidate, decision, sorted(train_ids), time.perf_counter() - t0, n_tokens, metrics
    )


def learning_curve(versions: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Points for the Model page: held-out scores against reviewed notes and tokens.

    ``versions`` are model records in creation order, each with the
    ``metrics`` dict :func:`retrain` produced (as stored on a ModelVersion) and
    optionally ``version``/``created_at``. Rejected candidates are included and
    flagged, so a dip that was refused is visible.
    """
    points = []
    for v in versions:
        m = v.get("metrics") or {}
        ev = m.get("evaluation") or {}
        cand = ev.get("candidate") or {}
        if "strict_f1" not in cand:
            continue
        points.append(
            {
                "version": v.get("version"),
                "created_at": v.get("created_at"),
                "docs": m.get("n_train_docs"),
                "tokens": m.get("n_train_tokens"),
                "strict_f1": cand["strict_f1"],
                "char_recall": cand["char_recall"],
                "method": ev.get("method"),
                "accepted": ev.get("decision") == "activated",
                "reason": ev.get("reason"),
            }
        )
    return points


# --------------------------------------------------------------------------- the store


def retrain_due(engine: Any, project: str) -> bool:
    """True once N notes were reviewed since the latest retrain, accepted or rejected.

    Counting from the latest candidate, not the active model, stops a rejected
    candidate from triggering a retrain at every following review. Call it
    after each saved review and start the background retrain when it is True.
    """
    from deid_core.store import repository as repo

    info = repo.get_project(engine, project)
    policy = RetrainPolicy.from_settings(info.settings)
    n_reviewed = repo.count_documents(engine, project, ("reviewed",))
    versions = repo.list_model_versions(engine, project)
    if not versions:
        return should_retrain(n_reviewed, policy)
    # A model registered from outside the loop (a starter model) used none of
    # this project's reviews, so its baseline is 0, not its training-set size.
    seen = versions[-1].metrics.get("n_reviewed", 0)
    return should_retrain(n_reviewed - int(seen), policy)


def trained_with(version: Any) -> str | None:
    """The crfsuite algorithm a registered model version was trained with (None: unknown)."""
    algo = (version.metrics.get("train_config") or {}).get("algorithm")
    return algo or (version.hyperparams or {}).get("algorithm")


def full_retrain_due(engine: Any, project: str) -> bool:
    """True once ``full_every`` notes were reviewed since the last full-algorithm candidate.

    Counted like :func:`retrain_due`, from the newest version trained with the
    policy's ``full_algorithm`` (accepted or rejected, so a rejected full
    candidate waits for the next ``full_every`` notes); a model registered from
    outside the loop, such as the starter, used none of this project's reviews.
    """
    from deid_core.store import repository as repo

    info = repo.get_project(engine, project)
    policy = RetrainPolicy.from_settings(info.settings)
    if policy.full_every == 0:
        return False
    n_reviewed = repo.count_documents(engine, project, ("reviewed",))
    full = [v for v in repo.list_model_versions(engine, project) if trained_with(v) == policy.full_algorithm]
    seen = int(full[-1].metrics.get("n_reviewed", 0)) if full else 0
    return should_retrain_full(n_reviewed - seen, policy)
