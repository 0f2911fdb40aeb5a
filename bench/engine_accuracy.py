"""Train on a corpus's train split, score its dev split: prints one JSON object.

    .venv/bin/python bench/engine_accuracy.py --corpus meddocan
    .venv/bin/python bench/engine_accuracy.py --corpus presidio-synth

Reports strict/relaxed/token/char scores, training wall and CPU seconds,
peak memory (ru_maxrss), Spearman rho(document log P, document F1), the
tokenisation upper bound on dev, and the full bias sweep with the largest
bias reaching 0.99 character-level PHI recall. The trained model directory
is saved under /tmp (never in the repository).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from deid_core.corpus import read_jsonl  # noqa: E402
from deid_core.engine.model import TrainConfig, bias_grid, train_model, with_config  # noqa: E402
from deid_core.engine.tokenize import tokenize  # noqa: E402
from deid_core.evaluation import evaluate  # noqa: E402
from deid_core.evaluation.bias_sweep import bias_sweep  # noqa: E402
from deid_core.schemes import load_scheme  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
SETTINGS = {
    "meddocan": {"lang": "es", "scheme": "meddocan", "target_f1": 0.93},
    "presidio-synth": {"lang": "en", "scheme": "presidio_synth", "target_f1": 0.80},
}


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", choices=sorted(SETTINGS), default="meddocan")
    ap.add_argument("--save", help="model directory (default /tmp/deid-engine-<corpus>)")
    ap.add_argument("--config", default="{}", help="JSON TrainConfig changes, e.g. '{\"c1\": 0.1}'")
    ap.add_argument("--data", type=Path, default=DATA, help=f"benchmark corpora (default {DATA})")
    args = ap.parse_args()
    settings = SETTINGS[args.corpus]
    lang = settings["lang"]
    train = read_jsonl(args.data / args.corpus / "train.jsonl")
    dev = read_jsonl(args.data / args.corpus / "dev.jsonl")
    config = with_config(TrainConfig(), **json.loads(args.config))

    wall, cpu = time.perf_counter(), cpu_seconds()
    model = train_model(train, lang=lang, scheme=load_scheme(settings["scheme"]), config=config)
    train_wall, train_cpu = time.perf_counter() - wall, cpu_seconds() - cpu
    peak_after_training = peak_mb()
    save = Path(args.save or f"/tmp/deid-engine-{args.corpus}")

    wall, cpu = time.perf_counter(), cpu_seconds()
    preds = [model.predict(d).to_document(d) for d in dev]
    tag_wall, tag_cpu = time.perf_counter() - wall, cpu_seconds() - cpu
    result = evaluate(dev, preds, scheme=model.scheme, lang=lang)
    model.metrics = {"dev": {k: v for k, v in result.items() if k != "errors"}}
    model.save(save)

    aligned = total = 0
    for doc in dev:
        tok = tokenize(doc.text, lang)
        starts = {t.start for t in tok.tokens}
        ends = {t.end for t in tok.tokens}
        aligned += sum(1 for s in doc.spans if s.start in starts and s.end in ends)
        total += len(doc.spans)

    wall = time.perf_counter()
    sweep = bias_sweep(model, dev, bias_grid(-4.0, 2.0, 0.25))
    sweep_wall = time.perf_counter() - wall
    first = sweep["first_bias_char_recall_0_99"]
    at_first = next((p for p in sweep["points"] if p["bias"] == first), None)
    strict = result["strict"]["micro"]
    print(json.dumps({
        "corpus": args.corpus,
        "train_documents": len(train),
        "dev_documents": len(dev),
        "config": config.to_dict(),
        "model_dir": str(save),
        "model_version": model.version,
        "strict_micro": strict,
        "strict_macro": result["strict"]["macro"],
        "relaxed_micro": result["relaxed"]["micro"],
        "token_micro": result["token"]["micro"],
        "char": {k: result["char"][k] for k in ("precision", "recall", "f1")},
        "per_label_f1": {k: round(v["f1"], 4) for k, v in result["strict"]["per_label"].items()},
        "target_strict_f1": settings["target_f1"],
        "meets_f1_target": strict["f1"] >= settings["target_f1"],
        "spearman_logprob_f1": result.get("spearman_logprob_f1"),
        "tokenisation_upper_bound": round(aligned / total, 5) if total else 1.0,
        "train_wall_s": round(train_wall, 1),
        "train_cpu_s": round(train_cpu, 1),
        "train_stage_wall_s": model.metadata["seconds"],
        "tagging_wall_s": round(tag_wall, 2),
        "tagging_cpu_s": round(tag_cpu, 2),
        "peak_rss_mb_after_training": round(peak_after_training, 1),
        "peak_rss_mb": round(peak_mb(), 1),
        "attributes": model.metadata["attributes"],
        "rule_mapping": model.rule_mapping,
        "bias_sweep_wall_s": round(sweep_wall, 1),
        "bias_sweep": sweep["points"],
        "first_bias_char_recall_0_99": first,
        "strict_precision_at_that_bias": at_first["strict"]["precision"] if at_first else None,
        "meets_sweep_target": bool(at_first and at_first["strict"]["precision"] >= 0.85),
        "load_average": os.getloadavg(),
    }))


if __name__ == "__main__":
    main()
