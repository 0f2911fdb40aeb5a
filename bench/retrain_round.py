"""One retraining round on the starter's corpus plus N reviewed notes: prints JSON.

    PYTHONPATH=. .venv/bin/python bench/retrain_round.py [--reviewed 30 200] [--model DIR] [--full]

Issue 13's round-time target: a round takes <= 30 s on one core for the
starter's corpus plus 200 reviewed notes. Runs ``learning.retrain.retrain_round``
(the app's and ``simulate``'s one code path) with the default
``RetrainPolicy``, from the bundled English starter (or ``--model``), with
generator notes of the dev template families (never in the starter's corpus,
seed 777_001 as ``bench/english_coldstart.py``) standing in for reviewed
notes. With few reviewed notes the round is a k-fold one (the candidate and
one model per fold); from about 100 on it is a held-out one (one model).
The first round in a process is cold: it generates the starter's corpus and
featurises its in-loop sample, which later rounds reuse (``--cold`` makes
every round cold, as the first round after the app starts).
Reports CPU and wall seconds per size, the comparison method and the
decision; no note text.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from deid_core.engine.model import DeidModel  # noqa: E402
from deid_core.learning.registry import RetrainPolicy  # noqa: E402
from deid_core.learning.retrain import _corpus_cache, _generated_corpus, retrain_round  # noqa: E402
from deid_core.synthetic import REALISTIC, generate_notes  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reviewed", type=int, nargs="+", default=[30, 200])
    ap.add_argument("--model", help="starting model directory (default: the bundled English starter)")
    ap.add_argument("--loop-iterations", type=int, help="override the policy's in-loop crfsuite passes")
    ap.add_argument("--cold", action="store_true",
                    help="forget the corpus and its kept features before each round, as in a freshly started app"
                         " (default: only the first round is cold)")
    ap.add_argument("--full", action="store_true",
                    help="the full round (the policy's L-BFGS settings), as every full_every notes in the app")
    args = ap.parse_args()
    if args.model:
        model_dir = Path(args.model)
    else:
        from deid_core.synthetic.starter import ensure_starter

        model_dir = ensure_starter("en")
    active = DeidModel.load(model_dir)
    policy = RetrainPolicy()
    if args.full:
        policy = policy.full()
    if args.loop_iterations:
        policy = replace(policy, loop_iterations=args.loop_iterations)
    pool = generate_notes(max(args.reviewed), seed=777_001, families="dev", **REALISTIC)
    out: dict = {"model": active.version, "policy": {"algorithm": policy.loop_algorithm,
                 "iterations": policy.loop_iterations, "folds": policy.folds}, "rounds": []}
    for i, n in enumerate(args.reviewed):
        if args.cold:
            _generated_corpus.cache_clear()
            _corpus_cache.cache_clear()
        c0, w0 = time.process_time(), time.perf_counter()
        result = retrain_round(pool[:n], active_model=active, policy=policy, lang="en")
        comparison = result.decision.comparison
        out["rounds"].append({
            "reviewed": n, "cold": args.cold or i == 0, "cpu_s": round(time.process_time() - c0, 1),
            "wall_s": round(time.perf_counter() - w0, 1), "method": comparison.method,
            "scored_notes": comparison.n_docs, "base_notes": result.metrics["n_base_docs"],
            "base_corpus_notes": result.metrics["n_base_corpus"],
            "accepted": result.decision.accepted, "reason": result.decision.reason,
        })
        print(json.dumps(out["rounds"][-1]), file=sys.stderr, flush=True)
    out["load_average"] = os.getloadavg()
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
