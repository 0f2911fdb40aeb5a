"""Accuracy cost of the in-loop sample of the starter's corpus (``RetrainPolicy.loop_base_chars``): prints JSON.

    PYTHONPATH=. .venv/bin/python bench/in_loop_sample.py [--budgets all,400000] [--sizes 20,100,200]
        [--seeds 0,1,2,3] [--select random|least_confident_span] [--srand 1,2,3] [--test-notes 250]

One candidate per cell, trained as a round trains it (``learning.retrain.make_trainer``
on ``in_loop_base`` of the bundled starter's corpus, the policy's in-loop crfsuite
settings and weighting), with N presidio-synth train notes as the reviewed notes
(labels mapped by ``bench/presidio_to_i2b2.yaml``): a seeded random sample
(``--select random``, one per ``--seeds``) or the N the starter is least sure of
(``--select least_confident_span``; crfsuite's ``pa`` shuffles with the C
library's ``rand()``, so each ``--srand`` value seeds it through ctypes for a
rerun of the same notes). Scored on the first ``--test-notes`` presidio-synth dev
notes (the new domain) and on all hand-written English challenge sets in
``tests/fixtures`` (what the starter knew about clinical notes). No note text
is printed. docs/active.md, "In-loop sample of the starter's corpus".
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.retrain_adaptation import DATA  # noqa: E402
from deid_core.corpus import read_jsonl  # noqa: E402
from deid_core.engine.model import DeidModel  # noqa: E402
from deid_core.learning.active import score_least_confident_span  # noqa: E402
from deid_core.learning.registry import RetrainPolicy, evaluate_predictions, predict_documents  # noqa: E402
from deid_core.learning.retrain import candidate_config, in_loop_base, make_trainer, training_corpus  # noqa: E402
from deid_core.learning.simulate import apply_label_map  # noqa: E402
from deid_core.synthetic.starter import ensure_starter  # noqa: E402

METRICS = ("char_recall", "char_precision", "strict_f1")


def score(model, docs) -> dict:  # noqa: ANN001
    m = evaluate_predictions(docs, predict_documents(model, docs))
    return {k: round(m[k], 4) for k in METRICS}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--budgets", default="all,400000", help="'all' or characters of the starter's corpus")
    ap.add_argument("--sizes", default="20,100,200")
    ap.add_argument("--seeds", default="0,1,2,3", help="--select random: one reviewed sample per seed")
    ap.add_argument("--select", choices=("random", "least_confident_span"), default="random")
    ap.add_argument("--srand", default="1", help="--select least_confident_span: C rand() seeds, one run each")
    ap.add_argument("--test-notes", type=int, default=250)
    args = ap.parse_args()
    mapping = yaml.safe_load((ROOT / "bench" / "presidio_to_i2b2.yaml").read_text("utf-8"))
    pool = apply_label_map(read_jsonl(DATA / "train.jsonl"), mapping)
    test = apply_label_map(read_jsonl(DATA / "dev.jsonl"), mapping)[: args.test_notes]
    challenge = [d for f in sorted((ROOT / "tests" / "fixtures").glob("english_challenge*.jsonl"))
                 for d in read_jsonl(f)]
    start = DeidModel.load(ensure_starter("en"))
    base = training_corpus(start)
    policy = RetrainPolicy()
    config = candidate_config(start.config, policy)
    budgets = [None if b == "all" else int(b) for b in args.budgets.split(",")]
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    if args.select == "random":
        orders = {f"seed {s}": np.random.default_rng(int(s)).permutation(len(pool)).tolist()
                  for s in args.seeds.split(",")}
        reruns = [None]
    else:
        scores = [score_least_confident_span(p) for p in start.predict_many(pool)]
        orders = {"least confident": sorted(range(len(pool)), key=lambda i: -scores[i])}
        reruns = [int(s) for s in args.srand.split(",")]
    out: dict = {"settings": vars(args), "challenge_notes": len(challenge), "test_notes": len(test),
                 "starter": {"presidio": score(start, test), "challenge": score(start, challenge)}, "rows": []}
    for sample, order in orders.items():
        for size in (int(x) for x in args.sizes.split(",")):
            reviewed = [pool[i] for i in order[:size]]
            for budget in budgets:
                for rerun in reruns:
                    if rerun is not None:
                        libc.srand(rerun)
                    part = in_loop_base(base, budget)
                    c0 = time.process_time()
                    model = make_trainer(part, lang="en", scheme=start.scheme, config=config, policy=policy)(
                        reviewed, None)
                    row = {"sample": sample, "srand": rerun, "reviewed": size, "budget": budget,
                           "base_notes": len(part), "train_cpu": round(time.process_time() - c0, 1),
                           "presidio": score(model, test), "challenge": score(model, challenge)}
                    out["rows"].append(row)
                    print(json.dumps(row), file=sys.stderr, flush=True)
    out["load_average"] = os.getloadavg()
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
