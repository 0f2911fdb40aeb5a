"""``deid-workbench significance``: is system A better than system B on the same gold corpus?

``evaluate`` itself is wired by the engine's CLI module; this one adds the
approximate-randomization test of paper 004 between two prediction files.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

# deid_core.evaluation pulls in scipy; it is imported only when the command
# runs, because every deid-workbench invocation imports this module.
METRIC_HELP = "criterion_measure, e.g. strict_f1, strict_recall, relaxed_f1, token_f1, char_recall"


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "significance",
        help="approximate-randomization test between two prediction files",
        description=(
            "Shuffle each document's predictions between systems A and B with probability 0.5,"
            " TRIALS times, and report how often the metric difference is at least as large as"
            " observed (paper 004; M = 9999). Documents are paired by id with the gold file."
        ),
    )
    p.add_argument("--gold", required=True, help="gold JSONL corpus")
    p.add_argument("--pred-a", required=True, help="predictions of system A (JSONL)")
    p.add_argument("--pred-b", required=True, help="predictions of system B (JSONL)")
    p.add_argument("--metric", default="strict_f1", help=f"{METRIC_HELP} (default: strict_f1)")
    p.add_argument("--trials", type=int, default=9999, help="number of shuffles (default: 9999)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    p.add_argument("--relaxed-chars", type=int, default=2, help="end tolerance for relaxed_*")
    p.add_argument("--lang", default="en", choices=("en", "es"), help="tokenizer for token_*")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")
    p.set_defaults(func=run_significance)


def run_significance(args: argparse.Namespace) -> int:
    from deid_core.corpus import read_jsonl
    from deid_core.evaluation import approximate_randomization, format_significance

    gold = read_jsonl(args.gold)
    # Predictions may overlap (unmerged system output); the evaluator handles that.
    pred_a = read_jsonl(args.pred_a, allow_overlap=True)
    pred_b = read_jsonl(args.pred_b, allow_overlap=True)
    result = approximate_randomization(
        gold,
        pred_a,
        pred_b,
        trials=args.trials,
        seed=args.seed,
        metric=args.metric,
        relaxed_chars=args.relaxed_chars,
        lang=args.lang,
    )
    if args.json:
        print(json.dumps(result))
    else:
        print(format_significance(result))
    sys.stdout.flush()
    return 0
