"""Dev-set search for the CRF defaults (TrainConfig): prints one JSON object.

    .venv/bin/python bench/engine_hparam_search.py --corpus meddocan
    .venv/bin/python bench/engine_hparam_search.py --corpus presidio-synth

Trains on ../shared/data/<corpus>/train.jsonl once per grid point and scores
dev: strict micro P/R/F1, character-level recall, training wall and CPU
seconds. The grid and the results are recorded in docs/engine.md.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from deid_core.corpus import read_jsonl  # noqa: E402
from deid_core.engine.model import TrainConfig, train_model, with_config  # noqa: E402
from deid_core.evaluation import char_prf, strict_prf  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
LANG = {"meddocan": "es", "presidio-synth": "en"}

GRID: list[dict] = [
    {"c1": 0.05, "c2": 0.01, "max_iterations": 50},
    {"c1": 0.05, "c2": 0.01, "max_iterations": 80, "sequence": "line"},
    {"c1": 0.1, "c2": 0.01, "max_iterations": 80},
    {"c1": 0.05, "c2": 0.01, "max_iterations": 80},
    {"c1": 0.05, "c2": 0.01, "max_iterations": 120},
    {"c1": 0.02, "c2": 0.05, "max_iterations": 80},
    {"c1": 0.05, "c2": 0.01, "max_iterations": 80, "features": {"window": 3}},
    {"c1": 0.1, "c2": 0.01, "max_iterations": 150, "sequence": "line", "features": {"window": 3}},
    {"c1": 0.05, "c2": 0.01, "max_iterations": 80, "features": {"gazetteer": False}},
    {"c1": 0.05, "c2": 0.01, "max_iterations": 80, "features": {"rules": False}},
]


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", choices=sorted(LANG), default="meddocan")
    ap.add_argument("--points", type=int, default=len(GRID), help="use only the first N grid points")
    ap.add_argument("--train-docs", type=int, help="use only the first N training documents")
    ap.add_argument("--dev-docs", type=int, help="use only the first N dev documents")
    args = ap.parse_args()
    lang = LANG[args.corpus]
    train = read_jsonl(DATA / args.corpus / "train.jsonl")[: args.train_docs]
    dev = read_jsonl(DATA / args.corpus / "dev.jsonl")[: args.dev_docs]
    results = []
    for point in GRID[: args.points]:
        config = with_config(TrainConfig(), **json.loads(json.dumps(point)))
        wall, cpu = time.perf_counter(), cpu_seconds()
        model = train_model(train, lang=lang, config=config)
        train_wall, train_cpu = time.perf_counter() - wall, cpu_seconds() - cpu
        preds = [model.predict(d).to_document(d) for d in dev]
        strict = strict_prf(dev, preds)
        char = char_prf(dev, preds)
        row = {
            "config": point,
            "strict": {k: round(float(strict[k]), 4) for k in ("precision", "recall", "f1")},
            "char_recall": round(float(char["recall"]), 4),
            "train_wall_s": round(train_wall, 1),
            "train_cpu_s": round(train_cpu, 1),
            "crf_wall_s": model.metadata["seconds"]["crf"],
            "attributes": model.metadata["attributes"],
        }
        results.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
    best = max(results, key=lambda r: r["strict"]["f1"])
    print(json.dumps({
        "corpus": args.corpus,
        "grid": GRID[: args.points],
        "train_documents": len(train),
        "dev_documents": len(dev),
        "results": results,
        "best": best,
        "note": "wall times include contention from other processes on a shared 2-core machine",
    }))


if __name__ == "__main__":
    main()
