"""Does the missed-PHI interval cover the true rate? One JSON object.

A population of ``--population`` synthetic notes with gold spans; a simulated
model misses each gold span with a per-kind probability (names 4%, ids and
contacts 3%, dates 2%, others 1%) and cuts 5% of the spans it finds short by
one to three characters, so the missed PHI characters of every note, and their
mean over the population (the true rate per 1,000 notes), are known. Each of
``--repeats`` repeats reviews ``--sample`` notes drawn at random and computes
the estimate with its 95% bootstrap interval (``protect/estimate.py``); the
bench counts how often the interval covers the true rate.

    .venv/bin/python bench/estimate_coverage.py [--population 5000 --sample 200 --repeats 100]
        [--miss-scale 0.1]
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

from deid_core.protect.estimate import estimate_missed, missed_chars
from deid_core.protect.surrogates import label_kinds
from deid_core.spans import Span
from deid_core.synthetic import iter_notes

MISS = {"name": 0.04, "id": 0.03, "phone": 0.03, "email": 0.03, "date": 0.02}


def simulate(population: int, seed: int, scale: float = 1.0) -> tuple[np.ndarray, int]:
    rng = np.random.default_rng(seed)
    kinds = label_kinds("i2b2_2014")
    missed, phi = [], 0
    for doc in iter_notes(population, seed=seed):
        predicted = []
        for s in doc.spans:
            phi += len(s)
            if rng.random() < scale * MISS.get(kinds.get(s.label, "other"), 0.01):
                continue
            if len(s) > 4 and rng.random() < scale * 0.05:
                s = Span(s.start, s.end - int(rng.integers(1, 4)), s.label)
            predicted.append(s)
        missed.append(missed_chars(predicted, doc.spans))
    return np.asarray(missed), phi


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--population", type=int, default=5000)
    ap.add_argument("--sample", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--miss-scale", type=float, default=1.0,
                    help="multiply every miss probability (0.1: a model that misses ten times less)")
    args = ap.parse_args()
    t0, c0 = time.perf_counter(), time.process_time()
    missed, phi = simulate(args.population, args.seed, args.miss_scale)
    true_rate = float(missed.mean()) * 1000
    rng = np.random.default_rng(args.seed + 1)
    covered, widths, uppers_below_true = 0, [], 0
    for r in range(args.repeats):
        idx = rng.choice(len(missed), size=args.sample, replace=False)
        est = estimate_missed(missed[idx].tolist(), seed=r)
        covered += est.low <= true_rate <= est.high
        uppers_below_true += est.high < true_rate
        widths.append(est.high - est.low)
    print(json.dumps({
        "population": args.population, "sample": args.sample, "repeats": args.repeats,
        "miss_scale": args.miss_scale,
        "true_missed_per_1000_notes": round(true_rate, 1),
        "notes_with_a_miss": round(float((missed > 0).mean()), 3),
        "true_char_recall": round(1 - missed.sum() / phi, 4),
        "covered": covered, "coverage": covered / args.repeats,
        "upper_bound_below_truth": uppers_below_true,
        "mean_interval_width": round(float(np.mean(widths)), 1),
        "wall_s": round(time.perf_counter() - t0, 1), "cpu_s": round(time.process_time() - c0, 1),
        "load_average": os.getloadavg(),
    }))


if __name__ == "__main__":
    main()
