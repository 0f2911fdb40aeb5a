"""How a candidate should build on the starter: reviewed-only vs duplication vs feature augmentation.

    python bench/retrain_adaptation.py [--base-notes 150] [--sizes 20,50,100]
        [--methods reviewed_only,duplicate:3,augment:1,augment:3] [--algorithm ap --max-iterations 10]

New-domain proxy: a small starting model trained on generator notes (i2b2
labels, its corpus recorded as the synthetic configuration), pool =
presidio-synth train (labels mapped by ``bench/presidio_to_i2b2.yaml``), test =
presidio-synth dev. For each number of reviewed notes (a seeded random sample
of the pool) each method trains a candidate with ``learning.retrain.make_trainer``
(the app's procedure) and is scored on dev: strict P/R/F1, character P/R.
Prints one JSON object; CPU and wall seconds beside each training.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from deid_core.corpus import read_jsonl  # noqa: E402
from deid_core.engine.model import TrainConfig, train_model  # noqa: E402
from deid_core.learning.registry import RetrainPolicy, evaluate_predictions, predict_documents  # noqa: E402
from deid_core.learning.retrain import make_trainer, training_corpus  # noqa: E402
from deid_core.learning.simulate import apply_label_map, check_labels  # noqa: E402
from deid_core.schemes import load_scheme  # noqa: E402

# ../shared/data beside the checkout (or beside the worktrees' parent), or DEID_BENCH_DATA
DATA = Path(os.environ.get("DEID_BENCH_DATA") or next(
    (p for p in (ROOT.parent / "shared" / "data", ROOT.parents[1] / "shared" / "data") if p.is_dir()),
    ROOT.parent / "shared" / "data",
)) / "presidio-synth"


def score(model, test) -> dict:  # noqa: ANN001
    m = evaluate_predictions(test, predict_documents(model, test))
    return {k: round(v, 4) for k, v in m.items() if k != "n_docs"}


def load_start_model(where: str):  # noqa: ANN201
    from deid_core.engine.model import DeidModel

    if where == "builtin":
        from deid_core.synthetic.starter import ensure_starter

        where = str(ensure_starter("en"))
    return DeidModel.load(where)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base-notes", type=int, default=150)
    ap.add_argument("--base-iterations", type=int, default=50, help="lbfgs iterations of the starter")
    ap.add_argument("--sizes", default="20,50,100")
    ap.add_argument("--methods", default="reviewed_only,duplicate:3,augment:1,augment:3")
    ap.add_argument("--algorithm", default="ap")
    ap.add_argument("--max-iterations", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--start-model", help="a model directory, or 'builtin' for the bundled English starter,"
                    " instead of training a small one on --base-notes generator notes")
    args = ap.parse_args()
    mapping = yaml.safe_load((ROOT / "bench" / "presidio_to_i2b2.yaml").read_text("utf-8"))
    scheme = load_scheme("i2b2_2014")
    pool = apply_label_map(read_jsonl(DATA / "train.jsonl"), mapping)
    test = apply_label_map(read_jsonl(DATA / "dev.jsonl"), mapping)
    check_labels(pool + test, scheme.names, "presidio-synth")
    t0, c0 = time.perf_counter(), time.process_time()
    if args.start_model:
        start = load_start_model(args.start_model)
    else:
        ref = {"kind": "synthetic", "lang": "en", "n": args.base_notes, "seed": 1, "options": {}}
        start = train_model(training_corpus({"corpus": ref}), lang="en", scheme=scheme,
                            config=TrainConfig(max_iterations=args.base_iterations), corpus=ref)
    out: dict = {"settings": vars(args), "load_average": os.getloadavg(),
                 "start_model": {"train_wall": round(time.perf_counter() - t0, 1),
                                 "train_cpu": round(time.process_time() - c0, 1), **score(start, test)},
                 "rounds": []}
    base = training_corpus(start)
    config = replace(start.config, algorithm=args.algorithm, max_iterations=args.max_iterations)
    rng = np.random.default_rng(args.seed)
    order = rng.permutation(len(pool))
    for size in (int(x) for x in args.sizes.split(",")):
        reviewed = [pool[i] for i in order[:size]]
        for spec in args.methods.split(","):
            method, _, w = spec.partition(":")
            policy = RetrainPolicy(adaptation="duplicate" if method == "reviewed_only" else method,
                                   reviewed_weight=int(w or 1))
            trainer = make_trainer([] if method == "reviewed_only" else base, lang="en",
                                   scheme=scheme, config=config, policy=policy)
            t0, c0 = time.perf_counter(), time.process_time()
            model = trainer(reviewed, None)
            row = {"reviewed": size, "method": spec, "train_wall": round(time.perf_counter() - t0, 1),
                   "train_cpu": round(time.process_time() - c0, 1), **score(model, test)}
            out["rounds"].append(row)
            print(json.dumps(row), file=sys.stderr)
    out["load_average_end"] = os.getloadavg()
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
