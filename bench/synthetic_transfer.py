"""How useful are synthetic notes for training? Prints one JSON object.

Trains the CRF engine (``deid_core.engine.model.train_model``, rules included) and
scores strict micro P/R/F and character recall (the leak view):

- ``en_synth_to_synth``: English synthetic train (seed 100) -> held-out
  synthetic notes of other patients (seed 200). Learnability of the generator.
- ``es_synth_to_meddocan``: Spanish synthetic train -> MEDDOCAN dev (real
  annotation, MEDDOCAN labels). Realism of the Spanish generator.
- ``es_meddocan_to_meddocan``: MEDDOCAN train (same size) -> MEDDOCAN dev, the
  reference the synthetic-trained model is compared with.
- ``es_meddocan_plus_synth``: MEDDOCAN train + the synthetic notes -> dev.

    .venv/bin/python bench/synthetic_transfer.py [--n-train 300] [--iterations 100]
        [--data ../shared/data/meddocan]
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path

from deid_core.corpus import read_jsonl
from deid_core.engine.model import TrainConfig, train_model
from deid_core.evaluation.metrics import char_prf, strict_prf
from deid_core.schemes import load_scheme
from deid_core.spans import Document
from deid_core.synthetic import generate_notes

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "meddocan"


def run(name: str, train: list[Document], test: list[Document], lang: str, scheme: str,
        config: TrainConfig) -> dict[str, object]:
    t0 = time.perf_counter()
    model = train_model(train, lang=lang, scheme=load_scheme(scheme), config=config)
    train_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    preds = [p.to_document(d) for p, d in zip(model.predict_many(test), test)]
    predict_s = time.perf_counter() - t0
    strict = strict_prf(test, preds)
    char = char_prf(test, preds)
    labels = sorted({s.label for d in test for s in d.spans})
    per_label = {}
    for label in labels:
        r = strict_prf(test, preds, labels=[label])
        per_label[label] = {"recall": round(float(r["recall"]), 3), "f1": round(float(r["f1"]), 3)}
    return {
        "experiment": name,
        "train_docs": len(train),
        "test_docs": len(test),
        "strict_p": round(float(strict["precision"]), 4),
        "strict_r": round(float(strict["recall"]), 4),
        "strict_f1": round(float(strict["f1"]), 4),
        "char_recall": round(float(char["recall"]), 4),
        "train_s": round(train_s, 1),
        "predict_s": round(predict_s, 1),
        "per_label_strict": per_label,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n-train", type=int, default=300)
    ap.add_argument("--n-test", type=int, default=300)
    ap.add_argument("--iterations", type=int, default=100)
    ap.add_argument("--data", default=str(DEFAULT_DATA))
    ap.add_argument("--skip", nargs="*", default=[], help="experiment names to skip")
    args = ap.parse_args()
    config = replace(TrainConfig(), max_iterations=args.iterations)
    results = []

    if "en_synth_to_synth" not in args.skip:
        train = generate_notes(args.n_train, seed=100)
        test = generate_notes(args.n_test, seed=200)
        results.append(run("en_synth_to_synth", train, test, "en", "i2b2_2014", config))

    data = Path(args.data)
    if (data / "dev.jsonl").exists():
        dev = read_jsonl(data / "dev.jsonl")
        real = read_jsonl(data / "train.jsonl")[: args.n_train]
        synth = generate_notes(args.n_train, seed=100, lang="es")
        plan = [
            ("es_synth_to_meddocan", synth),
            ("es_meddocan_to_meddocan", real),
            ("es_meddocan_plus_synth", real + synth),
        ]
        for name, train in plan:
            if name not in args.skip:
                results.append(run(name, train, dev, "es", "meddocan", config))

    print(json.dumps({"iterations": args.iterations, "results": results}, indent=1))


if __name__ == "__main__":
    main()
