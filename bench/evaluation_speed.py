"""Evaluator speed on a MEDDOCAN-sized corpus: prints one JSON object.

Predictions are the dev gold perturbed with a seeded generator (drops, end
shifts, relabels, spurious spans), so the figures do not need a trained model.
The bias sweep calls strict/token/char P/R/F for 25 bias values on the whole
dev set; ``sweep_25_points_s`` times exactly that with a token cache.

    .venv/bin/python bench/evaluation_speed.py [--data ../shared/data/meddocan/dev.jsonl]
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from pathlib import Path

import numpy as np

from deid_core.corpus import read_jsonl
from deid_core.evaluation import (
    approximate_randomization,
    char_prf,
    evaluate,
    strict_prf,
    token_prf,
    tokenize_corpus,
)
from deid_core.schemes import load_scheme
from deid_core.spans import Document, Span

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "meddocan" / "dev.jsonl"


def perturb(docs: list[Document], seed: int, drop: float = 0.06) -> list[Document]:
    """A plausible noisy system: most spans right, some missed, shifted, relabelled or invented."""
    rng = np.random.default_rng(seed)
    labels = sorted({s.label for d in docs for s in d.spans})
    out = []
    for d in docs:
        spans: list[Span] = []
        errors = 0
        for s in d.spans:
            r = rng.random()
            errors += r < drop + 0.09
            if r < drop:
                continue
            if r < drop + 0.05:
                end = min(len(d.text), max(s.start + 1, s.end + int(rng.integers(-3, 4))))
                spans.append(Span(s.start, end, s.label, "bench"))
            elif r < drop + 0.09:
                spans.append(Span(s.start, s.end, labels[int(rng.integers(len(labels)))], "bench"))
            else:
                spans.append(Span(s.start, s.end, s.label, "bench"))
        for _ in range(int(rng.poisson(1.0))):
            start = int(rng.integers(0, max(1, len(d.text) - 6)))
            spans.append(Span(start, start + 5, labels[int(rng.integers(len(labels)))], "bench"))
            errors += 1
        # A stand-in for the CRF's log P(y*|x): lower with more errors, plus noise.
        logprob = -float(rng.gamma(2.0, 1.0)) - 2.0 * errors
        out.append(d.with_spans(spans).with_meta(logprob=logprob))
    return out


def timed(fn, repeat: int = 1) -> tuple[float, object]:
    start = time.perf_counter()
    for _ in range(repeat):
        value = fn()
    return (time.perf_counter() - start) / repeat, value


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--lang", default="es")
    parser.add_argument("--scheme", default="meddocan")
    args = parser.parse_args()

    gold = read_jsonl(args.data)
    scheme = load_scheme(args.scheme)
    pred_a = perturb(gold, seed=1)
    pred_b = perturb(gold, seed=2, drop=0.09)
    n_spans = sum(len(d.spans) for d in gold)
    n_chars = sum(len(d.text) for d in gold)

    t_tok, cache = timed(lambda: tokenize_corpus(gold, args.lang))
    t_eval, result = timed(lambda: evaluate(gold, pred_a, scheme=scheme, lang=args.lang))
    t_eval_cached, _ = timed(
        lambda: evaluate(gold, pred_a, scheme=scheme, lang=args.lang, tokens=cache), repeat=3
    )
    t_strict, _ = timed(lambda: strict_prf(gold, pred_a), repeat=10)
    t_char, _ = timed(lambda: char_prf(gold, pred_a), repeat=10)
    t_token, _ = timed(lambda: token_prf(gold, pred_a, tokens=cache), repeat=10)

    def sweep() -> None:
        for _ in range(25):
            strict_prf(gold, pred_a)
            token_prf(gold, pred_a, tokens=cache)
            char_prf(gold, pred_a)

    t_sweep, _ = timed(sweep)
    t_ar, ar = timed(lambda: approximate_randomization(gold, pred_a, pred_b, trials=9999, seed=0))
    t_ar_token, ar_token = timed(
        lambda: approximate_randomization(
            gold, pred_a, pred_b, trials=9999, seed=0, metric="token_f1", tokens=cache
        )
    )
    print(
        json.dumps(
            {
                "data": str(args.data),
                "documents": len(gold),
                "gold_spans": n_spans,
                "characters": n_chars,
                "tokenize_corpus_s": round(t_tok, 4),
                "evaluate_s": round(t_eval, 4),
                "evaluate_with_token_cache_s": round(t_eval_cached, 4),
                "strict_prf_s": round(t_strict, 5),
                "char_prf_s": round(t_char, 5),
                "token_prf_cached_s": round(t_token, 5),
                "sweep_25_points_s": round(t_sweep, 4),
                "approximate_randomization_9999_strict_f1_s": round(t_ar, 4),
                "approximate_randomization_9999_token_f1_cached_s": round(t_ar_token, 4),
                "ar_strict_f1": {k: ar[k] for k in ("a", "b", "diff", "p_value")},
                "ar_token_f1_p_value": ar_token["p_value"],
                "perturbed_system_a": {
                    "strict_f1": round(result["strict"]["micro"]["f1"], 4),
                    "relaxed_f1": round(result["relaxed"]["micro"]["f1"], 4),
                    "token_f1": round(result["token"]["micro"]["f1"], 4),
                    "char_recall": round(result["char"]["recall"], 4),
                    "spearman_synthetic_logprob_f1": result["spearman_logprob_f1"],
                    "errors": {
                        k: result["errors"][k]["count"]
                        for k in ("type", "extent", "type&extent", "spurious", "missing")
                    },
                },
                "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
