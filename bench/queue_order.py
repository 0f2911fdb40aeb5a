"""Which document confidence measure ranks notes by their F1 best (issue 13, queue order)?

    python bench/queue_order.py --model MODEL_DIR [--dataset meddocan] [--split dev]
    python bench/queue_order.py --train-iterations 50 [--dataset meddocan]   # trains on train first

Tags every note of the split with the model (bias 0) and reports the Spearman
correlation between each measure (oriented so that higher = more confident)
and the note's strict F1 (a note with no gold and no predicted span scores 1):

* ``logprob``: log P(y*|x) of the note; ``logprob_per_token``: divided by its tokens
  (paper 002 found rho 0.7267 for the log-probability);
* ``neg_expected_errors``: -sum over tokens of (1 - max marginal), the expected
  number of tokens whose Viterbi tag is wrong; ``..._per_token`` likewise normalised;
* ``min_span_marginal``: the smallest marginal of a predicted span's token tags (1 if none);
* ``neg_phi_mass``: -sum over tokens of P(not O), the expected PHI token count.

Prints one JSON object with the load average and CPU/wall seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from deid_core.corpus import read_jsonl  # noqa: E402
from deid_core.engine.model import DeidModel, TrainConfig, train_model  # noqa: E402
from deid_core.evaluation import strict_prf  # noqa: E402
from deid_core.learning.active import confidence_measures  # noqa: E402
from deid_core.schemes import load_scheme  # noqa: E402

DATA = next(
    (p for p in (ROOT.parent / "shared" / "data", ROOT.parents[1] / "shared" / "data") if p.is_dir()),
    ROOT.parent / "shared" / "data",
)
DATASETS = {"meddocan": ("es", "meddocan"), "presidio-synth": ("en", "presidio_synth")}


def doc_f1(gold, pred) -> float:  # noqa: ANN001
    if not gold.spans and not pred.spans:
        return 1.0
    return float(strict_prf([gold], [pred])["f1"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None)
    ap.add_argument("--dataset", default="meddocan", choices=sorted(DATASETS))
    ap.add_argument("--split", default="dev")
    ap.add_argument("--train-iterations", type=int, default=50)
    args = ap.parse_args()
    lang, scheme = DATASETS[args.dataset]
    t0, c0 = time.perf_counter(), time.process_time()
    if args.model:
        model = DeidModel.load(args.model)
    else:
        train = read_jsonl(DATA / args.dataset / "train.jsonl")
        model = train_model(train, lang=lang, scheme=load_scheme(scheme),
                            config=TrainConfig(max_iterations=args.train_iterations))
    docs = read_jsonl(DATA / args.dataset / f"{args.split}.jsonl")
    measures: dict[str, list[float]] = {}
    f1s = []
    for d in docs:
        p = model.predict(d)
        f1s.append(doc_f1(d, p.to_document(d)))
        for name, value in confidence_measures(p).items():
            measures.setdefault(name, []).append(value)
    out = {
        "dataset": args.dataset, "split": args.split, "docs": len(docs), "model": model.version,
        "mean_doc_f1": round(float(np.mean(f1s)), 4),
        "spearman": {k: round(float(spearmanr(v, f1s).statistic), 4) for k, v in measures.items()},
        "wall_seconds": round(time.perf_counter() - t0, 1), "cpu_seconds": round(time.process_time() - c0, 1),
        "load_average": os.getloadavg(),
    }
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
