"""``deid-workbench simulate``: compare query strategies with gold labels as the reviewer."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

# deid_core.learning.active (modAL, scikit-learn) is imported only when the command
# runs: every deid-workbench invocation imports this module to register it.
STRATEGY_NAMES = "least_confident_span, least_confident, entropy, margin, phi_mass, random"


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "simulate",
        help="simulate active learning on a labelled pool and report learning curves",
        description=(
            "Run the active-learning loop with gold labels standing in for the reviewer:"
            " after each batch, report strict F1 and character recall on the test set"
            " against notes and tokens labelled. Strategies: " + STRATEGY_NAMES + "."
        ),
    )
    p.add_argument("--pool", required=True, help="JSONL corpus to select notes from (gold spans)")
    p.add_argument("--test", required=True, help="JSONL corpus to evaluate on after each batch")
    p.add_argument(
        "--strategy",
        default="least_confident,random",
        help="comma-separated strategy names (default: least_confident,random)",
    )
    p.add_argument("--seed-docs", type=int, default=10, help="random notes labelled first")
    p.add_argument("--batch", type=int, default=10, help="notes labelled per round")
    p.add_argument("--budget", type=int, default=300, help="stop after this many labelled notes")
    p.add_argument("--repeats", type=int, default=3, help="repeats with different seed notes")
    p.add_argument("--seed", type=int, default=0, help="random seed")
    p.add_argument("--lang", default="en", choices=("en", "es"))
    p.add_argument("--scheme", default=None, help="label scheme name or YAML path")
    p.add_argument(
        "--algorithm",
        default=None,
        help="crfsuite training algorithm inside the loop (e.g. lbfgs, ap, pa, arow)",
    )
    p.add_argument("--max-iterations", type=int, default=None, help="CRF iterations per retrain")
    p.add_argument(
        "--diversity",
        type=float,
        default=None,
        help="skip notes whose TF-IDF cosine to one already in the batch exceeds this",
    )
    p.add_argument(
        "--candidates",
        type=int,
        default=None,
        help="score only a random sub-pool of this many unlabelled notes per round",
    )
    p.add_argument(
        "--workers", type=int, default=1, help="processes for (repeat, strategy) runs (default 1)"
    )
    p.add_argument("--no-full-pool", action="store_true", help="skip the full-pool reference model")
    p.add_argument(
        "--start-model",
        default=None,
        metavar="PATH|builtin",
        help="start from this model directory (or 'builtin': the bundled starter for --lang) and"
        " its recorded training corpus, retraining each round exactly as the app does"
        " (keep-only-if-better included); --seed-docs is unused",
    )
    p.add_argument(
        "--label-map",
        default=None,
        metavar="FILE",
        help="JSON or YAML mapping of pool/test labels to the start model's labels"
        " ({FROM: TO}; TO null drops the span)",
    )
    p.add_argument(
        "--adaptation",
        choices=("augment", "duplicate"),
        default=None,
        help="with --start-model: how reviewed notes are weighted up (default: the retrain policy's)",
    )
    p.add_argument("--reviewed-weight", type=int, default=None, help="with --start-model: repeat count")
    p.add_argument("--folds", type=int, default=None, help="with --start-model: k of the k-fold comparison")
    p.add_argument("--full-every", type=int, default=None,
                   help="with --start-model: a full (L-BFGS) round once this many notes were labelled since"
                        " the last one, as in the app (default: the retrain policy's; 0: never)")
    p.add_argument("--loop-base-chars", type=int, default=None,
                   help="with --start-model: characters of the starter's corpus a fast round trains on"
                        " (default: the retrain policy's; 0: all of it)")
    p.add_argument("--bias", default=None, metavar="B|recall",
                   help="with --start-model: the project's O-label bias ('recall': each active model's own"
                        " recorded recall bias, as a project that follows it): the curve is scored and"
                        " the registry compares at it, as the app does. Default: as a new project in the"
                        " app, 'recall' when the start model records a recall bias (the starters do),"
                        " else 0")
    p.add_argument("--json", action="store_true", help="print the JSON result")
    p.set_defaults(func=run_simulate)


def loop_config(algorithm: str | None, max_iterations: int | None) -> Any:
    """The engine's TrainConfig with the loop's faster settings, or None for its defaults."""
    if algorithm is None and max_iterations is None:
        return None
    from dataclasses import replace

    from deid_core.engine.model import TrainConfig

    changes: dict[str, Any] = {}
    if algorithm is not None:
        changes["algorithm"] = algorithm
    if max_iterations is not None:
        changes["max_iterations"] = max_iterations
    return replace(TrainConfig(), **changes)


def read_label_map(path: str) -> dict[str, str | None]:
    """``{FROM: TO}`` from a JSON or YAML file; a clear error naming the file otherwise."""
    import yaml

    from deid_core.errors import UnsupportedFormat

    try:
        with open(path, encoding="utf-8") as fh:
            raw = yaml.safe_load(fh)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise UnsupportedFormat(f"{path}: cannot read label map ({type(exc).__name__})") from None
    if not isinstance(raw, dict) or not all(
        isinstance(k, str) and (v is None or isinstance(v, str)) for k, v in raw.items()
    ):
        raise UnsupportedFormat(f"{path}: a label map is a mapping of label names to label names or null")
    return dict(raw)


def start_policy(args: argparse.Namespace) -> Any:
    """The project's default retrain policy with the command line's changes."""
    from dataclasses import replace

    from deid_core.learning.registry import RetrainPolicy

    changes: dict[str, Any] = {}
    for arg, name in (("algorithm", "loop_algorithm"), ("max_iterations", "loop_iterations"),
                      ("adaptation", "adaptation"), ("reviewed_weight", "reviewed_weight"),
                      ("folds", "folds"), ("full_every", "full_every")):
        if getattr(args, arg) is not None:
            changes[name] = getattr(args, arg)
    if getattr(args, "loop_base_chars", None) is not None:
        changes["loop_base_chars"] = args.loop_base_chars or None
    return replace(RetrainPolicy(), **changes)


def run_simulate(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from deid_core.corpus import read_jsonl
    from deid_core.engine.recall_bias import parse_bias
    from deid_core.learning.simulate import simulate
    from deid_core.schemes import load_scheme

    strategies = [s.strip() for s in args.strategy.split(",") if s.strip()]
    try:
        bias = None if args.bias is None else parse_bias(args.bias)
    except ValueError as exc:
        raise SystemExit(f"simulate: --bias: {exc}") from None
    if bias not in (None, 0.0) and not args.start_model:
        raise SystemExit("simulate: --bias needs --start-model (the curve without one is scored at bias 0)")
    pool = read_jsonl(args.pool)
    test = read_jsonl(args.test)
    scheme = load_scheme(args.scheme) if args.scheme else None
    bar = tqdm(total=1.0, unit="run", file=sys.stderr, bar_format="{l_bar}{bar}| {elapsed}<{remaining}")

    def progress(message: str, fraction: float) -> None:
        bar.set_description(message)
        bar.n = round(fraction, 4)
        bar.refresh()

    try:
        if args.start_model:
            from deid_core.engine.model import DeidModel
            from deid_core.learning.simulate import simulate_from_model

            if args.start_model == "builtin":
                from deid_core.synthetic.starter import ensure_starter

                start_dir = ensure_starter(args.lang, progress=progress)
            else:
                start_dir = args.start_model
            result = simulate_from_model(
                DeidModel.load(start_dir),
                pool,
                test,
                strategies=strategies,
                batch=args.batch,
                budget=args.budget,
                repeats=args.repeats,
                policy=start_policy(args),
                seed=args.seed,
                full_pool=not args.no_full_pool,
                candidates=args.candidates,
                label_map=read_label_map(args.label_map) if args.label_map else None,
                progress=progress,
                bias=bias,
            )
        else:
            if args.label_map:
                mapping = read_label_map(args.label_map)
                from deid_core.learning.simulate import apply_label_map

                pool, test = apply_label_map(pool, mapping), apply_label_map(test, mapping)
            result = simulate(
                pool,
                test,
                strategies=strategies,
                seed_docs=args.seed_docs,
                batch=args.batch,
                budget=args.budget,
                repeats=args.repeats,
                lang=args.lang,
                scheme=scheme,
                config=loop_config(args.algorithm, args.max_iterations),
                seed=args.seed,
                diversity=args.diversity,
                full_pool=not args.no_full_pool,
                workers=args.workers,
                candidates=args.candidates,
                progress=progress,
            )
    finally:
        bar.close()
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    full = result.get("full_pool")
    if full:
        print(
            f"full pool ({full['docs']} notes): strict F1 {full['strict_f1']:.4f}"
            f"  char recall {full['char_recall']:.4f}"
        )
    for name, data in result["strategies"].items():
        print(f"\n{name}")
        print(f"{'notes':>7} {'tokens':>9} {'strict F1':>10} {'char rec':>9} {'char prec':>9} {'kept':>5}")
        for p in data["curve"]:
            kept = "yes" if p.get("accepted", True) else "no"
            print(f"{p['docs']:>7} {p['tokens']:>9.0f} {p['strict_f1']:>10.4f} {p['char_recall']:>9.4f}"
                  f" {p.get('char_precision', float('nan')):>9.4f} {kept:>5}")
    return 0
