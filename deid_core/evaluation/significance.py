"""Approximate-randomization significance test between two systems (paper 004 section 7).

Each trial swaps every document's output between systems A and B with
probability 0.5 and recomputes the metric difference. Because micro P/R/F
depend only on summed (tp, fp, fn) counts, one trial is a 0/1 mask times the
per-document count differences, so all trials are one matrix product.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from deid_core.engine.tokenize import tokenize
from deid_core.errors import UnsupportedFormat
from deid_core.evaluation.metrics import (
    TokenSource,
    char_counts,
    pair_documents,
    relaxed_counts,
    strict_counts,
    token_bounds,
    token_counts,
)
from deid_core.spans import Document

CRITERIA = ("strict", "relaxed", "token", "char")
MEASURES = ("precision", "recall", "f1")
METRICS = tuple(f"{c}_{m}" for c in CRITERIA for m in MEASURES)
_CHUNK = 2048  # trials per matrix product; bounds memory for large corpora


def _parse_metric(metric: str) -> tuple[str, str]:
    criterion, _, measure = metric.partition("_")
    if criterion not in CRITERIA or measure not in MEASURES:
        raise UnsupportedFormat(f"unknown metric {metric!r}: use one of {', '.join(METRICS)}")
    return criterion, measure


def document_counts(
    gold: Sequence[Document],
    pred: Sequence[Document],
    criterion: str = "strict",
    *,
    relaxed_chars: int = 2,
    lang: str = "en",
    tokens: Mapping[str, TokenSource] | None = None,
) -> np.ndarray:
    """(n_documents, 3) array of tp, fp, fn per gold document, in gold order."""
    pairs = pair_documents(gold, pred)
    rows = np.zeros((len(pairs), 3), dtype=np.float64)
    tokens = tokens or {}
    for i, (g, p) in enumerate(pairs):
        ps = p.spans if p is not None else ()
        if criterion == "char":
            overlap, gc, pc = char_counts(g.spans, ps)
            rows[i] = (overlap, pc - overlap, gc - overlap)
            continue
        if criterion == "strict":
            counts = strict_counts(g.spans, ps)
        elif criterion == "relaxed":
            counts = relaxed_counts(g.spans, ps, relaxed_chars)
        else:
            src = tokens.get(g.id)
            bounds = token_bounds(src) if src is not None else token_bounds(tokenize(g.text, lang))
            counts = token_counts(bounds, g.spans, ps)
        for tp, fp, fn in counts.values():
            rows[i, 0] += tp
            rows[i, 1] += fp
            rows[i, 2] += fn
    return rows


def _measure(sums: np.ndarray, measure: str) -> np.ndarray:
    """Vectorised ``prf`` over rows of summed (tp, fp, fn), same zero-denominator rule."""
    tp, fp, fn = sums[..., 0], sums[..., 1], sums[..., 2]
    both_empty = (tp == 0) & (fp == 0) & (fn == 0)
    empty_value = np.where(both_empty, 1.0, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = np.where(tp + fp > 0, tp / (tp + fp), empty_value)
        recall = np.where(tp + fn > 0, tp / (tp + fn), empty_value)
        if measure == "precision":
            return precision
        if measure == "recall":
            return recall
        denom = precision + recall
        return np.where(denom > 0, 2 * precision * recall / denom, 0.0)


def approximate_randomization(
    gold: Sequence[Document],
    pred_a: Sequence[Document],
    pred_b: Sequence[Document],
    *,
    trials: int = 9999,
    seed: int = 0,
    metric: str = "strict_f1",
    relaxed_chars: int = 2,
    lang: str = "en",
    tokens: Mapping[str, TokenSource] | None = None,
) -> dict[str, Any]:
    """Is A's ``metric`` different from B's by more than chance? Two-sided.

    p = (number of shuffles with |diff| >= observed |diff| + 1) / (trials + 1).
    Paper 004 counts ">" ; ">=" is the conservative choice and makes two
    identical systems give p = 1 rather than 1 / (M + 1).
    """
    criterion, measure = _parse_metric(metric)
    if trials < 1:
        raise UnsupportedFormat(f"trials must be at least 1, got {trials}")
    kwargs: dict[str, Any] = {"relaxed_chars": relaxed_chars, "lang": lang, "tokens": tokens}
    a = document_counts(gold, pred_a, criterion, **kwargs)
    b = document_counts(gold, pred_b, criterion, **kwargs)
    sum_a, sum_b = a.sum(axis=0), b.sum(axis=0)
    value_a = float(_measure(sum_a, measure))
    value_b = float(_measure(sum_b, measure))
    observed = abs(value_a - value_b)
    delta = b - a  # swapping document i moves delta[i] from B's sums to A's
    rng = np.random.default_rng(seed)
    n = len(a)
    at_least = 0
    done = 0
    # Float noise must not turn an exact tie into a "smaller" difference.
    threshold = observed - 1e-12
    while done < trials:
        m = min(_CHUNK, trials - done)
        swap = (rng.random((m, n)) < 0.5).astype(np.float64)
        moved = swap @ delta
        shuffled_a = sum_a + moved
        shuffled_b = sum_b - moved
        diffs = np.abs(_measure(shuffled_a, measure) - _measure(shuffled_b, measure))
        at_least += int(np.count_nonzero(diffs >= threshold))
        done += m
    return {
        "metric": metric,
        "a": value_a,
        "b": value_b,
        "diff": value_a - value_b,
        "p_value": (at_least + 1) / (trials + 1),
        "trials": trials,
        "seed": seed,
        "documents": n,
    }


def format_significance(result: Mapping[str, Any]) -> str:
    """One line a person can read: the two values, the difference and p."""
    return (
        f"{result['metric']}: A = {result['a']:.4f}, B = {result['b']:.4f},"
        f" A - B = {result['diff']:+.4f}, p = {result['p_value']:.4f}"
        f" ({result['trials']} shuffles of {result['documents']} documents, seed {result['seed']})"
    )


__all__ = [
    "METRICS",
    "approximate_randomization",
    "document_counts",
    "format_significance",
]
