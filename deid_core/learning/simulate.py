"""Simulated active learning: gold labels stand in for the reviewer.

This is how a strategy earns its place in the product: from the same random
seed notes, each strategy picks batches from the pool, the CRF is retrained
after every batch, and strict F1 and character recall on a fixed test set are
recorded against the number of notes *and* tokens labelled (a strategy that
picks long notes may look good by notes and bad by reviewer time, which
follows tokens).

Each repeat draws its own seed notes; every strategy of one repeat starts from
the same seed model, so differences between curves come from the choices
alone. Curves are averaged over repeats.
"""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from deid_core.engine.tokenize import tokenize
from deid_core.errors import UnsupportedFormat
from deid_core.learning.active import CRFEstimator, DocumentLearner, as_object_array, get_strategy
from deid_core.learning.registry import evaluate_predictions, model_bias, predict_documents
from deid_core.spans import Document

log = logging.getLogger(__name__)

Progress = Callable[[str, float], None]

__all__ = [
    "apply_label_map", "check_labels", "curve_schedule", "simulate", "simulate_from_model", "summarise",
]


def curve_schedule(n_pool: int, seed_docs: int, batch: int, budget: int) -> list[int]:
    """Labelled-note counts at which the model is evaluated: seed, +batch, ..., budget."""
    if seed_docs < 1 or batch < 1 or budget < 1:
        raise ValueError("seed_docs, batch and budget must be >= 1")
    cap = min(budget, n_pool)
    first = min(seed_docs, cap)
    points = [first]
    while points[-1] < cap:
        points.append(min(points[-1] + batch, cap))
    return points


_SCORES = ("strict_f1", "strict_precision", "strict_recall", "char_recall", "char_precision")


def _evaluate(model: Any, test: Sequence[Document], bias: float | str = 0.0) -> dict[str, float]:
    m = evaluate_predictions(test, predict_documents(model, test, bias))
    return {k: m[k] for k in _SCORES}


def _run_strategy(
    name: str,
    pool: np.ndarray,
    test: Sequence[Document],
    token_counts: np.ndarray,
    seed_idx: np.ndarray,
    seed_estimator: Any,
    seed_scores: dict[str, float],
    schedule: list[int],
    rng: np.random.Generator,
    diversity: float | None,
    tick: Callable[[str], None],
    candidates: int | None = None,
) -> list[dict[str, Any]]:
    info = get_strategy(name)
    # The seed model is shared between strategies; copy so that teach() refits a private one.
    learner = DocumentLearner(estimator=copy.copy(seed_estimator), query_strategy=info.function)
    learner.X_training = pool[seed_idx]
    learner.y_training = pool[seed_idx]
    labelled = list(seed_idx)
    unlabelled = np.setdiff1d(np.arange(len(pool)), seed_idx)
    curve = [
        {
            "docs": len(labelled),
            "tokens": int(token_counts[labelled].sum()),
            **seed_scores,
            "train_seconds": 0.0,
            "accepted": True,
            "round_seconds": 0.0,
        }
    ]
    for target in schedule[1:]:
        n = target - len(labelled)
        kwargs: dict[str, Any] = {"rng": rng}
        if diversity is not None:
            kwargs["diversity"] = diversity
        offered = unlabelled
        if candidates is not None and len(unlabelled) > max(candidates, n):
            # Score a random sub-pool: the CRF pass over every unlabelled note
            # dominates a round, and a random sub-pool also spreads the batch.
            offered = np.sort(rng.choice(unlabelled, size=max(candidates, n), replace=False))
        t0 = time.perf_counter()
        local_idx, _ = learner.query(pool[offered], n, **kwargs)
        query_seconds = time.perf_counter() - t0
        chosen = offered[np.asarray(local_idx, dtype=int)]
        t0 = time.perf_counter()
        learner.teach(pool[chosen], pool[chosen])
        train_seconds = time.perf_counter() - t0
        labelled.extend(int(i) for i in chosen)
        unlabelled = np.setdiff1d(unlabelled, chosen)
        scores = _evaluate(learner.estimator, test)
        curve.append(
            {
                "docs": len(labelled),
                "tokens": int(token_counts[labelled].sum()),
                **scores,
                "train_seconds": round(train_seconds, 3),
                "query_seconds": round(query_seconds, 3),
                # no registry from seed notes: every retrained model is kept
                "accepted": True,
                "round_seconds": round(query_seconds + train_seconds, 3),
            }
        )
        log.info(
            "simulate %s: %d notes, strict F1 %.4f, char recall %.4f, retrain %.1fs",
            name, len(labelled), scores["strict_f1"], scores["char_recall"], train_seconds,
        )
        tick(f"{name}: {len(labelled)} notes")
    return curve


def summarise(runs: Sequence[Sequence[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Mean curve over repeats (all repeats share one schedule), with the F1 spread."""
    out = []
    for points in zip(*runs):
        f1 = np.array([p["strict_f1"] for p in points])
        point: dict[str, Any] = {
            "docs": points[0]["docs"],
            "tokens": float(np.mean([p["tokens"] for p in points])),
            "strict_f1": float(f1.mean()),
            "char_recall": float(np.mean([p["char_recall"] for p in points])),
            "strict_f1_std": float(f1.std()),
        }
        for key in ("char_precision", "strict_precision", "strict_recall", "round_seconds",
                    "round_cpu_seconds", "bias"):
            if all(key in p for p in points):
                point[key] = float(np.mean([p[key] for p in points]))
        if all("accepted" in p for p in points):
            # kept by the registry in every repeat; the share says how often
            point["accepted"] = all(p["accepted"] for p in points)
            point["accepted_share"] = float(np.mean([bool(p["accepted"]) for p in points]))
        if all("full" in p for p in points):
            point["full"] = bool(points[0]["full"])  # the schedule, hence the round kind, is shared
        secs = [p["train_seconds"] for p in points if "query_seconds" in p]
        if secs:
            point["train_seconds"] = float(np.mean(secs))
        out.append(point)
    return out


def _seed_indices(n_pool: int, size: int, seed: int, repeat: int) -> np.ndarray:
    return np.sort(np.random.default_rng([seed, repeat]).choice(n_pool, size=size, replace=False))


def _task(
    pool: Sequence[Document],
    test: Sequence[Document],
    token_counts: np.ndarray,
    schedule: list[int],
    estimator: Any,
    seed: int,
    repeat: int,
    k: int,
    name: str,
    diversity: float | None,
    candidates: int | None,
) -> list[dict[str, Any]]:
    """One strategy in one repeat, self-contained so that a worker process can run it."""
    pool_arr = as_object_array(list(pool))
    seed_idx = _seed_indices(len(pool), schedule[0], seed, repeat)
    seed_est = copy.copy(estimator).fit(pool_arr[seed_idx])
    return _run_strategy(
        name, pool_arr, test, token_counts, seed_idx, seed_est, _evaluate(seed_est, test),
        schedule, np.random.default_rng([seed, repeat, k]), diversity, lambda _m: None,
        candidates,
    )


def simulate(
    pool: Sequence[Document],
    test: Sequence[Document],
    *,
    strategies: Sequence[str] = ("least_confident", "random"),
    seed_docs: int = 10,
    batch: int = 10,
    budget: int = 300,
    repeats: int = 3,
    lang: str = "en",
    scheme: Any = None,
    config: Any = None,
    seed: int = 0,
    diversity: float | None = None,
    full_pool: bool = True,
    workers: int = 1,
    candidates: int | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Run the loop for every strategy and repeat; returns the simulate JSON contract.

    ``{"full_pool": {"strict_f1", "char_recall"}, "strategies": {NAME: {"curve": [{"docs",
    "tokens", "strict_f1", "char_recall", ...}]}}}``, each curve the mean over
    ``repeats``; extra keys (spread, timings, settings) are additions only.
    With ``workers > 1`` each (repeat, strategy) runs in its own process and
    trains its own copy of the seed model; results are identical to a serial
    run, progress then advances per finished strategy run. ``candidates``
    limits each round's scoring to a random sub-pool of that many unlabelled
    notes (None: the whole pool).
    """
    if not pool or not test:
        raise ValueError("simulate needs a non-empty pool and test set")
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    for name in strategies:
        get_strategy(name)  # fail before any training on a misspelt name
    pool_arr = as_object_array(list(pool))
    token_counts = np.array([len(tokenize(d.text, lang).tokens) for d in pool], dtype=int)
    schedule = curve_schedule(len(pool), seed_docs, batch, budget)
    rounds = len(schedule) - 1
    if workers > 1:
        total = repeats * len(strategies) * (1 + rounds) + int(full_pool)
    else:
        total = repeats * (1 + len(strategies) * rounds) + int(full_pool)
    done = 0

    def tick(message: str, units: int = 1) -> None:
        nonlocal done
        done += units
        if progress is not None:
            progress(message, min(1.0, done / total))

    estimator = CRFEstimator(lang=lang, scheme=scheme, config=config)
    result: dict[str, Any] = {}
    runs: dict[str, list[list[dict[str, Any]]]] = {name: [] for name in strategies}
    jobs = [(r, k, name) for r in range(repeats) for k, name in enumerate(strategies)]
    if workers > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=workers) as ex:
            futures = {
                (r, name): ex.submit(
                    _task, list(pool), list(test), token_counts, schedule, estimator,
                    seed, r, k, name, diversity, candidates,
                )
                for r, k, name in jobs
            }
            if full_pool:
                result["full_pool"] = _full_pool(estimator, pool_arr, test, token_counts)
                tick("full pool")
            for (r, name), fut in futures.items():
                runs[name].append(fut.result())
                tick(f"repeat {r + 1}: {name}", 1 + rounds)
    else:
        if full_pool:
            result["full_pool"] = _full_pool(estimator, pool_arr, test, token_counts)
            tick("full pool")
        for r in range(repeats):
            seed_idx = _seed_indices(len(pool), schedule[0], seed, r)
            seed_est = copy.copy(estimator).fit(pool_arr[seed_idx])
            seed_scores = _evaluate(seed_est, test)
            tick(f"repeat {r + 1}: seed model")
            for k, name in enumerate(strategies):
                rng = np.random.default_rng([seed, r, k])
                runs[name].append(
                    _run_strategy(
                        name, pool_arr, test, token_counts, seed_idx, seed_est, seed_scores,
                        schedule, rng, diversity, tick, candidates,
                    )
                )
    result["strategies"] = {name: {"curve": summarise(runs[name])} for name in strategies}
    result["settings"] = {
        "pool_docs": len(pool),
        "test_docs": len(test),
        "seed_docs": seed_docs,
        "batch": batch,
        "budget": budget,
        "repeats": repeats,
        "seed": seed,
        "lang": lang,
        "diversity": diversity,
        "candidates": candidates,
    }
    return result


def _full_pool(
    estimator: Any, pool_arr: np.ndarray, test: Sequence[Document], token_counts: np.ndarray
) -> dict[str, Any]:
    t0 = time.perf_counter()
    full = copy.copy(estimator).fit(pool_arr)
    seconds = time.perf_counter() - t0
    return {
        **_evaluate(full, test),
        "docs": len(pool_arr),
        "tokens": int(token_counts.sum()),
        "train_seconds": round(seconds, 3),
    }


# --------------------------------------------------------------------------- from a starting model


def apply_label_map(docs: Sequence[Document], mapping: dict[str, str | None]) -> list[Document]:
    """Relabel spans (``{"FROM": "TO"}``; ``TO`` null drops the span); unmapped labels stay."""
    out = []
    for d in docs:
        spans = []
        for sp in d.spans:
            if sp.label in mapping:
                target = mapping[sp.label]
                if target is None:
                    continue
                sp = replace(sp, label=target)
            spans.append(sp)
        out.append(d.with_spans(tuple(spans)))
    return out


def check_labels(docs: Sequence[Document], names: Sequence[str], origin: str) -> None:
    """Refuse gold labels the model cannot learn: name them, and how to map them."""
    unknown = sorted({sp.label for d in docs for sp in d.spans} - set(names))
    if unknown:
        raise UnsupportedFormat(
            f"{origin}: labels {', '.join(unknown)} are not in the model's scheme"
            f" ({', '.join(sorted(names))}); map them with --label-map FILE"
        )


def _start_run(
    name: str,
    start_model: Any,
    base: list[Document],
    pool: list[Document],
    test: Sequence[Document],
    token_counts: np.ndarray,
    schedule: list[int],
    start_scores: dict[str, float],
    policy: Any,
    lang: str,
    rng: np.random.Generator,
    candidates: int | None,
    tick: Callable[[str], None],
    bias: float | str = 0.0,
) -> list[dict[str, Any]]:
    """One strategy from the starting model: query a batch, run the app's retrain round, score.

    As in the app, a round is a full (L-BFGS) one once the policy's
    ``full_every`` notes were labelled since the last full candidate; the
    starting model counts as one, trained before any note was labelled.
    """
    from deid_core.learning.registry import should_retrain_full
    from deid_core.learning.retrain import retrain_round

    info = get_strategy(name)
    active, active_ids = start_model, set()
    labelled: list[int] = []
    last_full = 0
    unlabelled = np.arange(len(pool))
    curve = [{"docs": 0, "tokens": 0, **start_scores, "accepted": True, "round_seconds": 0.0,
              "train_seconds": 0.0}]
    for target in schedule:
        n = target - len(labelled)
        offered = unlabelled
        if candidates is not None and len(unlabelled) > max(candidates, n):
            offered = np.sort(rng.choice(unlabelled, size=max(candidates, n), replace=False))
        t0 = time.perf_counter()
        local, _ = info.function(active, [pool[i] for i in offered], n, rng=rng)
        query_seconds = time.perf_counter() - t0
        chosen = offered[np.asarray(local, dtype=int)]
        labelled.extend(int(i) for i in chosen)
        unlabelled = np.setdiff1d(unlabelled, chosen)
        full = should_retrain_full(len(labelled) - last_full, policy)
        if full:
            last_full = len(labelled)
        t0, c0 = time.perf_counter(), time.process_time()
        result = retrain_round(
            [pool[i] for i in labelled], active_model=active, policy=policy.full() if full else policy,
            lang=lang, active_train_ids=active_ids, base_docs=base, bias=bias,
        )
        round_seconds = time.perf_counter() - t0
        round_cpu = time.process_time() - c0
        if result.decision.accepted:
            active, active_ids = result.model, set(result.train_ids)
        scores = _evaluate(active, test, bias)
        curve.append({
            "docs": len(labelled),
            "tokens": int(token_counts[labelled].sum()),
            **scores,
            "bias": model_bias(active, bias),
            "accepted": result.decision.accepted,
            "reason": result.decision.reason,
            "full": full,
            "round_seconds": round(round_seconds, 3),
            "round_cpu_seconds": round(round_cpu, 3),  # one core's share on a busy machine
            "train_seconds": float(result.metrics.get("train_seconds", 0.0)),
            "query_seconds": round(query_seconds, 3),
        })
        log.info(
            "simulate %s from start model: %d notes, %s, strict F1 %.4f, char recall %.4f, round %.1fs",
            name, len(labelled), "accepted" if result.decision.accepted else "rejected",
            scores["strict_f1"], scores["char_recall"], round_seconds,
        )
        tick(f"{name}: {len(labelled)} notes")
    return curve


def new_project_bias(start_model: Any) -> float | str:
    """The O-label bias a project started from ``start_model`` uses in the app.

    A new project starts at its starter's recorded recall bias and follows
    each model version's own (docs/app.md), so a simulation that claims to
    run the loop as the app does scores it there unless told otherwise; a
    model that records no recall bias starts a project at 0.
    """
    from deid_core.engine.recall_bias import RECALL, recall_bias_or_none

    return RECALL if recall_bias_or_none(start_model.metadata) is not None else 0.0


def simulate_from_model(
    start_model: Any,
    pool: Sequence[Document],
    test: Sequence[Document],
    *,
    strategies: Sequence[str] = ("least_confident", "random"),
    batch: int = 25,
    budget: int = 200,
    repeats: int = 1,
    policy: Any = None,
    seed: int = 0,
    full_pool: bool = True,
    candidates: int | None = None,
    label_map: dict[str, str | None] | None = None,
    progress: Progress | None = None,
    bias: float | str | None = None,
) -> dict[str, Any]:
    """The review loop from a starting model, retraining exactly as the app does.

    Each round the strategy picks ``batch`` notes with the active model, gold
    labels stand in for the reviewer, and
    :func:`deid_core.learning.retrain.retrain_round` (the app's path) trains a
    candidate on the starting model's training corpus plus every labelled note
    and keeps it only if it is not worse on labelled notes it did not see. The
    curve scores the *active* model on ``test`` after each round, starting
    with the starting model itself at 0 notes; ``accepted`` says whether the
    registry kept that round's candidate. ``bias`` is the project's O-label
    bias the curve is scored at, fixed for the run as a project setting is;
    ``"recall"`` follows each active model's own recorded recall bias, as a
    project that uses its model's recall bias does in the app. The registry
    compares candidate and active at it, as the app does with the project's.
    ``None`` is a new project's bias in the app (:func:`new_project_bias`).
    """
    from deid_core.learning.registry import RetrainPolicy
    from deid_core.learning.retrain import RecallBiasChoice, make_trainer, training_corpus

    if not pool or not test:
        raise ValueError("simulate needs a non-empty pool and test set")
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    for name in strategies:
        get_strategy(name)
    pool = list(pool)
    test = list(test)
    if label_map:
        pool, test = apply_label_map(pool, label_map), apply_label_map(test, label_map)
    check_labels(pool, start_model.scheme.names, "pool")
    check_labels(test, start_model.scheme.names, "test set")
    policy = policy or RetrainPolicy()
    lang = start_model.lang
    base = training_corpus(start_model)
    token_counts = np.array([len(tokenize(d.text, lang).tokens) for d in pool], dtype=int)
    schedule = curve_schedule(len(pool), batch, batch, budget)
    total = repeats * len(strategies) * len(schedule) + int(full_pool) + 1
    done = 0

    def tick(message: str) -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(message, min(1.0, done / total))

    from deid_core.engine.recall_bias import parse_bias

    if bias is None:
        bias = new_project_bias(start_model)
    elif isinstance(bias, str):
        bias = parse_bias(bias)
    start_bias = model_bias(start_model, bias)  # fails here, not after the first round, without one
    start_scores = {**_evaluate(start_model, test, bias), "bias": start_bias}
    tick("starting model scored")
    result: dict[str, Any] = {}
    if full_pool:
        from deid_core.learning.retrain import candidate_config

        t0 = time.perf_counter()
        trainer = make_trainer(base, lang=lang, scheme=start_model.scheme,
                               config=candidate_config(start_model.config, policy), policy=policy,
                               recall_bias=RecallBiasChoice.of(start_model))
        full = trainer(pool, None)
        result["full_pool"] = {**_evaluate(full, test, bias), "docs": len(pool),
                               "tokens": int(token_counts.sum()),
                               "train_seconds": round(time.perf_counter() - t0, 3)}
        tick("full pool")
    runs: dict[str, list[list[dict[str, Any]]]] = {name: [] for name in strategies}
    for r in range(repeats):
        for k, name in enumerate(strategies):
            runs[name].append(_start_run(
                name, start_model, base, pool, test, token_counts, schedule, start_scores, policy,
                lang, np.random.default_rng([seed, r, k]), candidates, tick, bias,
            ))
    result["strategies"] = {name: {"curve": summarise(runs[name])} for name in strategies}
    result["start_model"] = {"version": start_model.version, **start_scores,
                             "base_docs": len(base), "corpus": start_model.metadata.get("corpus")}
    result["settings"] = {
        "pool_docs": len(pool), "test_docs": len(test), "seed_docs": 0, "batch": batch,
        "budget": budget, "repeats": repeats, "seed": seed, "lang": lang, "candidates": candidates,
        "bias": bias, "start_bias": start_bias,
        "policy": policy.to_settings(), "label_map": dict(label_map) if label_map else None,
    }
    return result
