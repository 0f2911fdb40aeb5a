"""``deid-workbench train | predict | evaluate | bias-sweep``: the engine's commands.

Every command reads corpora in the shared JSONL format (all or nothing) and
writes atomically; long runs show a tqdm bar on stderr. Heavy modules are
imported when a command runs, because every invocation imports this module.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def register(subparsers: Any) -> None:
    t = subparsers.add_parser(
        "train",
        help="train a CRF model on a gold JSONL corpus",
        description="Train the CRF (with rules and gazetteers as features) and save a model directory.",
    )
    t.add_argument("--data", required=True, help="training corpus (JSONL with gold spans)")
    t.add_argument("--dev", help="dev corpus: its scores are stored in the model's metrics.json")
    t.add_argument("--lang", default="en", choices=("en", "es"), help="language (default: en)")
    t.add_argument("--scheme", help="label scheme name or YAML path (default: built from corpus labels)")
    t.add_argument("--out", required=True, help="model directory to write (replaced atomically)")
    t.add_argument("--c1", type=float, help="L1 penalty")
    t.add_argument("--c2", type=float, help="L2 penalty")
    t.add_argument("--max-iterations", type=int, help="L-BFGS iterations")
    t.add_argument("--min-freq", type=int, help="drop attributes seen fewer times")
    t.add_argument(
        "--sequence", choices=("note", "line", "sentence"),
        help="what one CRF sequence is (default: note; transitions then carry across line breaks)",
    )
    t.add_argument(
        "--word-list", action="append", default=[], metavar="[LABEL=]PATH",
        help="gazetteer word list: LABEL=path (one phrase a line) or path (LABEL<TAB>phrase lines)",
    )
    t.add_argument("--rules", help="rule YAML file (default: the built-in rules for --lang)")
    t.add_argument("--no-rules", action="store_true", help="no regex rules at all")
    t.add_argument("--no-gazetteer", action="store_true", help="no gazetteer features")
    t.add_argument("--no-filters", action="store_true", help="no post-processing filters")
    t.add_argument("--seed", type=int, default=0, help="seed for gazetteer folds (default: 0)")
    t.add_argument(
        "--charcrf", choices=("windows", "all"),
        help="also train the character-level CRF (paper 000), run on windows or on every line",
    )
    t.add_argument(
        "--tbed", type=int, metavar="FOLDS",
        help="also learn TBED transformations (paper 003) from FOLDS-fold out-of-fold errors",
    )
    t.set_defaults(func=run_train)

    p = subparsers.add_parser(
        "predict",
        help="tag a JSONL corpus with a trained model",
        description=(
            "Write the input documents with predicted spans (source and score on each) and the"
            " document log-probability in meta: logprob, logprob_per_token, model_version, bias."
        ),
    )
    add_model_arguments(p)
    p.add_argument("--input", required=True, help="JSONL corpus to tag (gold spans are ignored)")
    p.add_argument("--output", required=True, help="JSONL file to write")
    add_bias_argument(p)
    p.set_defaults(func=run_predict)

    e = subparsers.add_parser(
        "evaluate",
        help="score predictions against gold (strict, relaxed, token, character leak view)",
    )
    e.add_argument("--gold", required=True, help="gold JSONL corpus")
    e.add_argument("--pred", required=True, help="predicted JSONL corpus")
    e.add_argument("--lang", default="en", choices=("en", "es"), help="tokenizer for the token criterion")
    e.add_argument("--scheme", help="label scheme name or YAML path (for categories and HIPAA)")
    e.add_argument("--json", action="store_true", help="print the result as one JSON object")
    e.set_defaults(func=run_evaluate)

    b = subparsers.add_parser(
        "bias-sweep",
        help="precision/recall at each O-label bias; the bias that reaches 0.99 PHI recall",
        description=(
            "Encode each document once, decode at every bias from --from to --to. The reported"
            " first_bias_char_recall_0_99 is the LARGEST bias (the most precision-friendly) whose"
            " character-level PHI recall is at least 0.99, or null if none reaches it."
        ),
    )
    add_model_arguments(b)
    b.add_argument("--gold", required=True, help="gold JSONL corpus")
    b.add_argument("--from", dest="start", type=float, default=-4.0, help="lowest bias (default -4)")
    b.add_argument("--to", dest="stop", type=float, default=2.0, help="highest bias (default 2)")
    b.add_argument("--step", type=float, default=0.25, help="bias step (default 0.25)")
    b.add_argument("--json", action="store_true", help="print the result as one JSON object")
    b.set_defaults(func=run_bias_sweep)


def bias_type(text: str) -> float | str:
    """argparse type for ``--bias``: a number or ``recall``."""
    from deid_core.engine.recall_bias import parse_bias

    try:
        return parse_bias(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_bias_argument(parser: Any) -> None:
    parser.add_argument(
        "--bias", type=bias_type, default=0.0, metavar="BIAS|recall",
        help="O-label bias; < 0 favours recall (default 0). 'recall': the bias the model recorded"
             " for 97%% character recall on its dev notes (the starter models record one)",
    )


def add_model_arguments(parser: Any) -> None:
    parser.add_argument(
        "--model", help="model directory (default: the bundled starter model for --lang,"
                        " built and cached on first use)",
    )
    parser.add_argument("--lang", default="en", choices=("en", "es"),
                        help="language of the starter model used without --model (default: en)")


def model_dir(args: argparse.Namespace) -> str:
    """``--model``, or the starter for ``--lang`` (built with a progress bar on first use)."""
    if args.model:
        return str(args.model)
    from deid_core.synthetic.starter import ensure_starter, is_built, starter_dir

    if is_built(args.lang):
        return str(starter_dir(args.lang))
    print(f"no --model: building the {args.lang} starter model in {starter_dir(args.lang)}"
          " (first use only, a few minutes on one core)", file=sys.stderr)
    bar = _Bar("building the starter model")
    try:
        path = ensure_starter(args.lang, progress=bar)
    finally:
        bar.close()
    return str(path)


class _Bar:
    """A tqdm bar driven by the library's ``progress(message, fraction)`` callbacks."""

    def __init__(self, desc: str) -> None:
        from tqdm import tqdm

        self._bar = tqdm(total=1000, desc=desc, unit="‰", file=sys.stderr, leave=False)
        self._done = 0

    def __call__(self, message: str, fraction: float) -> None:
        target = int(round(1000 * fraction))
        if target > self._done:
            self._bar.update(target - self._done)
            self._done = target
        self._bar.set_postfix_str(message, refresh=False)

    def close(self) -> None:
        self._bar.close()


def _scheme(name: str | None):  # type: ignore[no-untyped-def]
    if not name:
        return None
    from deid_core.schemes import load_scheme

    return load_scheme(name)


def run_train(args: argparse.Namespace) -> int:
    from deid_core.corpus import file_corpus_reference, read_nonempty_jsonl
    from deid_core.engine.model import TrainConfig, train_model, with_config
    from deid_core.evaluation import evaluate
    from deid_core.protect.cleanup import clean_debris

    clean_debris()  # deid-train-* folders of killed training runs
    docs = read_nonempty_jsonl(args.data)
    dev = read_nonempty_jsonl(args.dev) if args.dev else None
    config = TrainConfig()
    changes: dict[str, Any] = {"seed": args.seed}
    for name in ("c1", "c2", "max_iterations", "min_freq", "sequence"):
        if getattr(args, name) is not None:
            changes[name] = getattr(args, name)
    if args.word_list:
        changes["word_lists"] = tuple(args.word_list)
    if args.rules:
        changes["rules_path"] = args.rules
    if args.no_filters:
        changes["use_filters"] = False
    feature_changes = {}
    if args.no_rules:
        feature_changes["rules"] = False
    if args.no_gazetteer:
        feature_changes["gazetteer"] = False
    if feature_changes:
        changes["features"] = feature_changes
    if args.charcrf:
        from deid_core.engine.charcrf import CharCRFConfig

        changes["charcrf"] = CharCRFConfig(mode=args.charcrf, seed=args.seed)
    config = with_config(config, **changes)
    bar = _Bar("training")
    try:
        corpus = file_corpus_reference(args.data, len(docs))
        if args.tbed:
            from deid_core.learning.tbed import TBEDConfig, train_with_transforms

            model = train_with_transforms(
                docs, lang=args.lang, scheme=_scheme(args.scheme), config=config,
                tbed=TBEDConfig(folds=args.tbed, seed=args.seed), progress=bar,
            )
            model.metadata["corpus"] = dict(corpus)
        else:
            model = train_model(docs, lang=args.lang, scheme=_scheme(args.scheme), config=config,
                                progress=bar, corpus=corpus)
    finally:
        bar.close()
    if dev is not None:
        preds = [p.to_document(d) for p, d in zip(model.predict_many(dev, progress=True), dev)]
        result = evaluate(dev, preds, scheme=model.scheme, lang=args.lang)
        model.metrics = {"dev": _without_examples(result), "dev_documents": len(dev)}
    model.save(args.out)
    seconds = model.metadata["seconds"]["total"]
    line = f"model {model.version}: {len(docs)} documents, {seconds:.1f} s -> {args.out}"
    if dev is not None:
        micro = model.metrics["dev"]["strict"]["micro"]
        line += f"; dev strict micro P/R/F1 {micro['precision']:.4f}/{micro['recall']:.4f}/{micro['f1']:.4f}"
    print(line)
    return 0


def _without_examples(result: dict[str, Any]) -> dict[str, Any]:
    """Metrics without error examples: a model directory must not collect note text."""
    out = dict(result)
    errors = out.get("errors")
    if isinstance(errors, dict):
        out["errors"] = {k: v for k, v in errors.items() if k != "examples"}
    return out


def run_predict(args: argparse.Namespace) -> int:
    from deid_core.corpus import read_jsonl, write_jsonl
    from deid_core.engine.model import DeidModel, freeze_loaded_heap
    from deid_core.engine.recall_bias import resolve_bias

    docs = read_jsonl(args.input, allow_overlap=True)
    model = DeidModel.load(model_dir(args))
    bias = resolve_bias(args.bias, model.metadata, f"model {model.version}")
    freeze_loaded_heap()
    preds = model.predict_many(docs, bias=bias, progress=True)
    write_jsonl(args.output, [p.to_document(d) for p, d in zip(preds, docs)])
    n_spans = sum(len(p.spans) for p in preds)
    print(f"{len(docs)} documents, {n_spans} spans (model {model.version}, bias {bias:g}) -> {args.output}")
    return 0


def run_evaluate(args: argparse.Namespace) -> int:
    from deid_core.corpus import read_jsonl, read_nonempty_jsonl
    from deid_core.evaluation import evaluate, format_report

    gold = read_nonempty_jsonl(args.gold)
    pred = read_jsonl(args.pred, allow_overlap=True)
    result = evaluate(gold, pred, scheme=_scheme(args.scheme), lang=args.lang)
    if args.json:
        print(json.dumps(result))
    else:
        print(format_report(result))
    return 0


def run_bias_sweep(args: argparse.Namespace) -> int:
    from deid_core.corpus import read_nonempty_jsonl
    from deid_core.engine.model import DeidModel, bias_grid
    from deid_core.engine.recall_bias import RECALL_BIAS_KEY
    from deid_core.evaluation.bias_sweep import bias_sweep

    grid = bias_grid(args.start, args.stop, args.step)
    gold = read_nonempty_jsonl(args.gold)
    model = DeidModel.load(model_dir(args))
    recorded = model.metadata.get(RECALL_BIAS_KEY)
    bar = _Bar("bias sweep")
    try:
        result = bias_sweep(model, gold, grid, progress=bar)
    finally:
        bar.close()
    result["model_version"] = model.version
    result["recorded_recall_bias"] = recorded
    if args.json:
        print(json.dumps(result))
        return 0
    print(f"{'bias':>6}  {'strict P':>8} {'strict R':>8} {'strict F1':>9}  {'token R':>7}  {'char P':>7} {'char R':>7}")
    for pt in result["points"]:
        s, tk, c = pt["strict"], pt["token"], pt["char"]
        print(
            f"{pt['bias']:>6.2f}  {s['precision']:>8.4f} {s['recall']:>8.4f} {s['f1']:>9.4f}"
            f"  {tk['recall']:>7.4f}  {c['precision']:>7.4f} {c['recall']:>7.4f}"
        )
    first = result["first_bias_char_recall_0_99"]
    print(
        "largest bias reaching char recall >= 0.99: "
        + ("none in range" if first is None else f"{first:g}")
    )
    if recorded is not None:
        print(f"model {model.version} records recall bias {recorded:g} (--bias recall)")
    return 0
