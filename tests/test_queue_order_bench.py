"""bench/queue_order.py's exact span probabilities against brute-force enumeration of a toy CRF.

The bench compares confidence measures for issue 13; its "exact" measures rest
on these probabilities, so they are checked here on a case small enough to
enumerate every tag path (5 tokens, 4 tags: 1024 paths).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from script_support import load_script

from deid_core.engine.tagging import tags_to_spans
from deid_core.engine.tokenize import Token

NAMES = ["O", "B-X", "I-X", "B-Y"]  # Y has no I- tag: its spans are one token long


def _bench():  # type: ignore[no-untyped-def]
    return load_script("bench/queue_order.py", "queue_order_bench")


def _brute_force(E: np.ndarray, T: np.ndarray) -> tuple[dict[tuple[int, int, str], float], float, float]:
    """P(span read from the tags) for every span that occurs, E[number of spans], log Z."""
    n = E.shape[0]
    tokens = [Token("w", 2 * k, 2 * k + 1, 0, k == 0) for k in range(n)]
    scores, span_sets = [], []
    for path in itertools.product(range(len(NAMES)), repeat=n):
        scores.append(E[np.arange(n), path].sum() + sum(T[path[k - 1], path[k]] for k in range(1, n)))
        spans = tags_to_spans(tokens, [NAMES[j] for j in path])
        span_sets.append({(s.start // 2, (s.end - 1) // 2, s.label) for s in spans})
    scores = np.array(scores)
    log_z = float(np.logaddexp.reduce(scores))
    probs = np.exp(scores - log_z)
    out: dict[tuple[int, int, str], float] = {}
    for p, spans in zip(probs, span_sets):
        for sp in spans:
            out[sp] = out.get(sp, 0.0) + float(p)
    return out, float(sum(p * len(s) for p, s in zip(probs, span_sets))), log_z


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_span_probabilities_match_enumeration(seed: int) -> None:
    bench = _bench()
    rng = np.random.default_rng(seed)
    E = rng.normal(0.0, 1.5, (5, len(NAMES)))
    T = rng.normal(0.0, 1.5, (len(NAMES), len(NAMES)))
    truth, expected_spans, log_z = _brute_force(E, T)
    queries = [(a, b, lab) for a in range(5) for b in range(a, 5) for lab in ("X", "Y")]
    probs, e_spans, got_log_z = bench.crf_span_probabilities(E, T, [(0, 5)], NAMES, queries)
    for (a, b, lab), p in zip(queries, probs):
        assert p == pytest.approx(truth.get((a, b, lab), 0.0), abs=1e-9), (a, b, lab)
    assert e_spans == pytest.approx(expected_spans, abs=1e-9)
    assert got_log_z == pytest.approx(log_z, abs=1e-9)
    # Probabilities of every span sum to the expected number of spans.
    assert sum(probs) == pytest.approx(expected_spans, abs=1e-9)


def test_span_the_tags_cannot_express_is_none() -> None:
    bench = _bench()
    E = np.zeros((4, len(NAMES)))
    T = np.zeros((len(NAMES), len(NAMES)))
    probs, _, _ = bench.crf_span_probabilities(E, T, [(0, 2), (2, 4)], NAMES, [(0, 1, "Z"), (1, 2, "X")])
    assert probs == [None, None]  # no B-Z tag; a span across two CRF sequences


def test_sentence_measures_count_expected_wrong_sentences() -> None:
    bench = _bench()

    class Pred:
        sentence_logprobs = (np.log(0.9), np.log(0.4), 0.0)
        spans = ("a", "b", "c")

    got = bench.sentence_measures(Pred())
    assert got["sent_expected_wrong"] == pytest.approx(-(0.1 + 0.6))
    assert got["sent_expected_wrong_per_span"] == pytest.approx(-0.7 / 4)
    assert got["sent_min_lp"] == pytest.approx(np.log(0.4))
    assert got["sent_unsure"] == -1.0


def test_report_rank_combination() -> None:
    """``combo`` is the weighted rank average: at W = 1 it ranks as B does, at 0 as A does."""
    bench = _bench()
    rng = np.random.default_rng(0)
    f1 = rng.random(40)
    rows = [{"f1": float(f), "n_gold": 1,
             "measures": {"logprob": float(-k), "logprob_per_token": float(rng.random()),
                          "logprob_per_span": float(f + 0.1 * rng.random()), "b": float(f)}}
            for k, f in enumerate(f1)]
    only_b = bench.report(rows, combine={"b": 1.0}, versus=("b",))
    assert only_b["spearman"]["combo"]["ours"] == pytest.approx(1.0)
    only_a = bench.report(rows, combine={"logprob_per_span": 1.0, "b": 0.0})
    assert only_a["spearman"]["combo"] == only_a["spearman"]["logprob_per_span"]
    low, high = only_b["bootstrap_95"]["b - logprob_per_span"][1:]
    assert 0.0 <= low <= high
