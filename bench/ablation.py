"""Ablation of the detection stages on a corpus's dev split: prints JSON, then a small table.

    .venv/bin/python bench/ablation.py --corpus meddocan
    .venv/bin/python bench/ablation.py --corpus presidio-synth
    .venv/bin/python bench/ablation.py --corpus meddocan --train-limit 100 --dev-limit 40   # a quick look

Configurations (each adds to the one before, "all" is everything):

* ``crf``      token CRF alone (no rule features, no rule spans);
* ``rules``    + regex rules (features and mapped rule spans, merged rule > crf): today's default;
* ``charcrf``  + the character-level CRF (paper 000), on windows around uncertain tokens;
* ``charcrf-all`` the same weights run on every line (the speed comparison of the issue);
* ``tbed``     ``rules`` + TBED transformations (paper 003) learned on 2-fold out-of-fold errors;
* ``all``      ``charcrf`` + TBED learned on that system's out-of-fold errors.

Per configuration: strict micro P/R/F1 and character recall at bias 0; the
recall bias (the largest grid bias with character recall >= 0.99, else -2)
and the character recall and strict precision there; the character recall
at the most recall-friendly bias whose strict precision is still >= 0.90;
tagging speed (characters per CPU second, one process); training CPU
seconds. CPU seconds are the process's own (``time.process_time``), so they
hold on a shared machine; wall seconds and the load average are printed too.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from deid_core.corpus import read_jsonl  # noqa: E402
from deid_core.engine.charcrf import CharCRFConfig  # noqa: E402
from deid_core.engine.model import DeidModel, TrainConfig, bias_grid, train_model, with_config  # noqa: E402
from deid_core.evaluation import evaluate  # noqa: E402
from deid_core.evaluation.bias_sweep import bias_sweep  # noqa: E402
from deid_core.learning.tbed import TBEDConfig, learn_transforms, out_of_fold_predictions  # noqa: E402
from deid_core.schemes import load_scheme  # noqa: E402

# The corpora sit in ``shared/data`` beside the checkout (or beside its parent, for a worktree).
DATA = next((p / "shared" / "data" for p in ROOT.parents if (p / "shared" / "data").is_dir()), ROOT.parent / "shared" / "data")
SETTINGS = {
    "meddocan": {"lang": "es", "scheme": "meddocan"},
    "presidio-synth": {"lang": "en", "scheme": "presidio_synth"},
}
GRID = bias_grid(-4.0, 2.0, 0.25)


def score(model: DeidModel, dev: list, lang: str) -> dict[str, Any]:
    for doc in dev[:5]:  # warm the compiled kernels; the emission table still starts cold
        model.predict(doc)
    cpu, wall = time.process_time(), time.perf_counter()
    preds = [model.predict(d).to_document(d) for d in dev]
    tag_cpu, tag_wall = time.process_time() - cpu, time.perf_counter() - wall
    chars = sum(len(d.text) for d in dev)
    result = evaluate(dev, preds, scheme=model.scheme, lang=lang)
    sweep = bias_sweep(model, dev, GRID)
    points = {p["bias"]: p for p in sweep["points"]}
    first = sweep["first_bias_char_recall_0_99"]
    recall_bias = first if first is not None else -2.0
    at_recall = points.get(recall_bias)
    p90 = [p for p in sweep["points"] if p["strict"]["precision"] >= 0.90]
    at_p90 = min(p90, key=lambda p: p["bias"]) if p90 else None
    strict = result["strict"]["micro"]
    return {
        "strict": {k: round(strict[k], 4) for k in ("precision", "recall", "f1")},
        "char_recall": round(result["char"]["recall"], 4),
        "recall_bias": recall_bias,
        "recall_bias_reaches_0_99": first is not None,
        "char_recall_at_recall_bias": round(at_recall["char"]["recall"], 4) if at_recall else None,
        "strict_precision_at_char_recall_0_99": round(points[first]["strict"]["precision"], 4) if first is not None else None,
        "bias_at_strict_precision_0_90": at_p90["bias"] if at_p90 else None,
        "char_recall_at_strict_precision_0_90": round(at_p90["char"]["recall"], 4) if at_p90 else None,
        "tagging_chars_per_cpu_s": round(chars / tag_cpu) if tag_cpu else None,
        "tagging_cpu_s": round(tag_cpu, 2),
        "tagging_wall_s": round(tag_wall, 2),
    }


def load_corpus(corpus: str, train_limit: int = 0, dev_limit: int = 0) -> tuple[str, Any, list, list]:
    """``(lang, scheme, train, dev)`` of a benchmark corpus, each split cut to its first N notes (0: all)."""
    settings = SETTINGS[corpus]
    train = read_jsonl(DATA / corpus / "train.jsonl")
    dev = read_jsonl(DATA / corpus / "dev.jsonl")
    return (settings["lang"], load_scheme(settings["scheme"]),
            train[:train_limit] if train_limit else train, dev[:dev_limit] if dev_limit else dev)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", choices=sorted(SETTINGS), default="meddocan")
    ap.add_argument("--train-limit", type=int, default=0, help="first N train notes (0: all)")
    ap.add_argument("--dev-limit", type=int, default=0, help="first N dev notes (0: all)")
    ap.add_argument("--configs", default="crf,rules,charcrf,charcrf-all,tbed,all")
    ap.add_argument("--char", default="{}", help="JSON CharCRFConfig changes")
    args = ap.parse_args()
    wanted = args.configs.split(",")
    lang, scheme, train, dev = load_corpus(args.corpus, args.train_limit, args.dev_limit)
    char_cfg = CharCRFConfig(**json.loads(args.char))
    base = TrainConfig()
    configs = {
        "crf": with_config(base, features={"rules": False}),
        "rules": base,
        "charcrf": with_config(base, charcrf=char_cfg),
    }
    rows: dict[str, Any] = {}

    def trained(config: TrainConfig) -> tuple[DeidModel, float, float]:
        cpu, wall = time.process_time(), time.perf_counter()
        model = train_model(train, lang=lang, scheme=scheme, config=config)
        return model, time.process_time() - cpu, time.perf_counter() - wall

    def tbed_for(config: TrainConfig) -> tuple[Any, float, float]:
        cpu, wall = time.process_time(), time.perf_counter()
        tb = TBEDConfig()
        oof = out_of_fold_predictions(train, lang=lang, scheme=scheme, config=config, folds=tb.folds, seed=tb.seed)
        ts = learn_transforms(train, oof, lang=lang, config=tb)
        return ts, time.process_time() - cpu, time.perf_counter() - wall

    def run(name: str, model: DeidModel, train_cpu: float, train_wall: float, **extra: Any) -> None:
        row = score(model, dev, lang)
        row.update(train_cpu_s=round(train_cpu, 1), train_wall_s=round(train_wall, 1),
                   load_average=[round(x, 2) for x in os.getloadavg()], **extra)
        rows[name] = row
        print(json.dumps({"config": name, **row}), file=sys.stderr, flush=True)

    if "crf" in wanted:
        run("crf", *trained(configs["crf"]))
    if {"rules", "tbed"} & set(wanted):
        model, cpu, wall = trained(configs["rules"])
        if "rules" in wanted:
            run("rules", model, cpu, wall)
        if "tbed" in wanted:
            ts, tcpu, twall = tbed_for(configs["rules"])
            model.transforms = ts
            run("tbed", model, cpu + tcpu, wall + twall, transforms=len(ts))
    if {"charcrf", "charcrf-all", "all"} & set(wanted):
        model, cpu, wall = trained(configs["charcrf"])
        extra = {"charcrf_training": model.metadata.get("charcrf")}
        if "charcrf" in wanted:
            run("charcrf", model, cpu, wall, **extra)
        if "charcrf-all" in wanted and model.char is not None:
            windows = model.char
            model.char = windows.with_config(CharCRFConfig(**{**char_cfg.to_dict(), "mode": "all"}))
            run("charcrf-all", model, cpu, wall, **extra)
            model.char = windows
        if "all" in wanted:
            ts, tcpu, twall = tbed_for(configs["charcrf"])
            model.transforms = ts
            run("all", model, cpu + tcpu, wall + twall, transforms=len(ts), **extra)
    out = {
        "corpus": args.corpus,
        "train_documents": len(train),
        "dev_documents": len(dev),
        "char_config": char_cfg.to_dict(),
        "configs": rows,
    }
    print(json.dumps(out))
    head = f"{'config':<12} {'P':>6} {'R':>6} {'F1':>6} {'charR':>6} {'rbias':>6} {'charR@rb':>8} {'P@cR.99':>8} {'cR@P.90':>8} {'kchar/s':>8} {'trainCPU':>8}"
    print(head, file=sys.stderr)
    for name, r in rows.items():
        def f(x: Any) -> str:
            return "-" if x is None else f"{x:.4f}" if isinstance(x, float) else str(x)

        kcs = r["tagging_chars_per_cpu_s"]
        print(
            f"{name:<12} {f(r['strict']['precision']):>6} {f(r['strict']['recall']):>6} {f(r['strict']['f1']):>6}"
            f" {f(r['char_recall']):>6} {r['recall_bias']:>6} {f(r['char_recall_at_recall_bias']):>8}"
            f" {f(r['strict_precision_at_char_recall_0_99']):>8} {f(r['char_recall_at_strict_precision_0_90']):>8}"
            f" {(kcs or 0) / 1000:>8.0f} {r['train_cpu_s']:>8}",
            file=sys.stderr,
        )


if __name__ == "__main__":
    main()
