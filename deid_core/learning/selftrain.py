"""Optional self-training (paper 001), off by default.

Paper 001 adds the most confidently predicted unlabelled records to the
training data and keeps the new identifier only if it beats the previous one,
because wrongly labelled silver records otherwise accumulate. Here:

* silver notes are the unreviewed notes with the highest length-normalised
  log-probability (paper 002: that ranks notes by how likely they are to be
  tagged perfectly), carrying the model's own spans;
* their weight is limited: the reviewed (gold) notes are repeated
  ``gold_repeat`` times in the training list, so with the CRF's per-sequence
  loss every silver note counts ``1/gold_repeat`` of a gold one, and the
  number of silver notes is capped relative to the gold ones;
* the self-trained model is kept only if it *improves* strict F1 on reviewed
  notes it did not train on, without losing character recall (the same
  k-fold / held-out comparison the registry uses, with zero tolerance).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from deid_core.learning.registry import Comparison, RetrainPolicy, compare, split_reviewed
from deid_core.spans import Document

log = logging.getLogger(__name__)

Progress = Callable[[str, float], None]
Trainer = Callable[[list[Document], "Progress | None"], Any]

__all__ = ["SelfTrainConfig", "SelfTrainResult", "select_silver", "self_train", "silver_trainer"]


@dataclass(frozen=True)
class SelfTrainConfig:
    enabled: bool = False  # a project opts in: silver data is never added silently
    max_share: float = 0.5  # at most this many silver notes per gold note
    top_fraction: float = 0.2  # only from the most confident fifth of the unreviewed notes
    gold_repeat: int = 2  # each gold note counts this many times a silver note
    min_logprob_per_token: float = -0.05  # and only notes at least this confident

    def __post_init__(self) -> None:
        if not 0 < self.top_fraction <= 1:
            raise ValueError(f"top_fraction must be in (0, 1], got {self.top_fraction}")
        if self.max_share < 0:
            raise ValueError(f"max_share must be >= 0, got {self.max_share}")
        if self.gold_repeat < 1:
            raise ValueError(f"gold_repeat must be >= 1, got {self.gold_repeat}")


def select_silver(
    model: Any,
    unreviewed: Sequence[Document],
    n_gold: int,
    config: SelfTrainConfig,
) -> list[Document]:
    """The model's own tagging of its most confident unreviewed notes, marked as silver."""
    if not unreviewed or n_gold == 0:
        return []
    preds = model.predict_many(list(unreviewed))
    ranked = sorted(
        zip(unreviewed, preds), key=lambda dp: (-dp[1].logprob_per_token, dp[0].id)
    )
    limit = min(
        int(len(unreviewed) * config.top_fraction),
        int(n_gold * config.max_share),
    )
    out = []
    for doc, pred in ranked[: max(0, limit)]:
        if pred.logprob_per_token < config.min_logprob_per_token:
            break
        silver = pred.to_document(doc)
        out.append(silver.with_meta(silver=True, silver_logprob_per_token=float(pred.logprob_per_token)))
    log.info("self-training: %d silver notes from %d unreviewed", len(out), len(unreviewed))
    return out


def silver_trainer(trainer: Trainer, silver: Sequence[Document], gold_repeat: int) -> Trainer:
    """A trainer that adds ``silver`` to its gold notes, each gold note repeated ``gold_repeat`` times."""
    silver_ids = {d.id for d in silver}

    def train(docs: list[Document], progress: Progress | None = None) -> Any:
        gold = [d for d in docs if d.id not in silver_ids]
        return trainer(gold * gold_repeat + list(silver), progress)

    return train


@dataclass(frozen=True)
class SelfTrainResult:
    kept: bool
    reason: str
    model: Any  # the self-trained model, or None when nothing was tried
    silver_ids: tuple[str, ...]
    comparison: Comparison | None


def self_train(
    reviewed: Sequence[Document],
    unreviewed: Sequence[Document],
    *,
    trainer: Trainer,
    base_model: Any,
    config: SelfTrainConfig,
    policy: RetrainPolicy | None = None,
    progress: Progress | None = None,
) -> SelfTrainResult:
    """One round of paper 001's self-training; the caller keeps ``model`` only if ``kept``.

    ``base_model`` is the model trained on the reviewed notes alone (the one
    to beat); it labels the silver notes.
    """
    if not config.enabled:
        return SelfTrainResult(False, "self-training is off", None, (), None)
    policy = policy or RetrainPolicy()
    train_part, held = split_reviewed(reviewed, policy)
    gold = list(train_part) if len(held) >= policy.min_heldout else list(reviewed)
    silver = select_silver(base_model, unreviewed, len(gold), config)
    if not silver:
        return SelfTrainResult(False, "no unreviewed note is confident enough", None, (), None)
    augmented = silver_trainer(trainer, silver, config.gold_repeat)
    model = augmented(gold, progress)
    gold_ids = {d.id for d in gold}
    comparison = compare(
        reviewed,
        trainer=augmented,
        candidate_model=model,
        candidate_train_ids=gold_ids,
        active_model=base_model,
        active_train_ids=gold_ids,
        active_trainer=trainer,
        policy=policy,
        progress=progress,
    )
    silver_ids = tuple(d.id for d in silver)
    if comparison.active is None:
        return SelfTrainResult(False, "too few reviewed notes to judge self-training", model, silver_ids, comparison)
    c, a = comparison.candidate, comparison.active
    figures = (
        f"strict F1 {c['strict_f1']:.4f} vs {a['strict_f1']:.4f},"
        f" char recall {c['char_recall']:.4f} vs {a['char_recall']:.4f}"
        f" ({len(silver)} silver notes, {comparison.method})"
    )
    if c["strict_f1"] > a["strict_f1"] and c["char_recall"] >= a["char_recall"]:
        return SelfTrainResult(True, f"kept: held-out F1 improved [{figures}]", model, silver_ids, comparison)
    return SelfTrainResult(False, f"discarded: no held-out improvement [{figures}]", model, silver_ids, comparison)
