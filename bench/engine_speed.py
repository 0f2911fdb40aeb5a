"""Tagging speed on MEDDOCAN dev notes, one core: prints one JSON object.

    .venv/bin/python bench/engine_accuracy.py --corpus meddocan   # trains /tmp/deid-engine-meddocan
    .venv/bin/python bench/engine_speed.py [--model /tmp/deid-engine-meddocan]

Measures end-to-end tagging (tokenizer, rules, features, emissions,
forward-backward, Viterbi, merge, filters) of the dev notes in three passes:
"cold" from a freshly loaded model (every word new to the emission cache),
"steady" after tagging the 500 train notes (other documents: the state of a
long run, where most but not all words are known), and "repeat" (the same
notes again, everything cached). The process freezes its start-up heap after
loading the model, as the CLI and batch workers do (``freeze_loaded_heap``).
Also per-stage milliseconds, the re-decode time of one note at a new bias,
and the bias curve (25 biases) over 200 notes. CPU seconds are reported
beside wall seconds because the machine may be shared.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from deid_core.corpus import read_jsonl  # noqa: E402
from deid_core.engine.decoder import forward_backward, viterbi  # noqa: E402
from deid_core.engine.model import DeidModel, bias_grid, freeze_loaded_heap, sequence_bounds  # noqa: E402
from deid_core.engine.tokenize import tokenize  # noqa: E402

DATA = ROOT.parent / "shared" / "data"


def clock() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def since(start: tuple[float, float]) -> tuple[float, float]:
    return time.perf_counter() - start[0], time.process_time() - start[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="/tmp/deid-engine-meddocan")
    ap.add_argument("--corpus", default="meddocan")
    ap.add_argument("--data", type=Path, default=DATA, help=f"benchmark corpora (default {DATA})")
    args = ap.parse_args()
    dev = read_jsonl(args.data / args.corpus / "dev.jsonl")
    train = read_jsonl(args.data / args.corpus / "train.jsonl")
    chars = sum(len(d.text) for d in dev) / len(dev)

    start = clock()
    model = DeidModel.load(args.model)
    load_wall, _ = since(start)
    freeze_loaded_heap()

    passes = []
    for name in ("cold", "steady", "repeat"):
        if name == "steady":
            for doc in train:
                model.predict(doc)
        start = clock()
        for doc in dev:
            model.predict(doc)
        wall, cpu = since(start)
        passes.append({"pass": name, "docs_per_s_wall": round(len(dev) / wall, 1),
                       "docs_per_s_cpu": round(len(dev) / cpu, 1)})

    stages = dict.fromkeys(("tokenize", "rules", "features", "emissions", "forward_backward", "viterbi"), 0.0)
    fx = model.extractor
    for doc in dev:
        t0 = time.process_time()
        tok = tokenize(doc.text, model.lang)
        t1 = time.process_time()
        rules = model.rules.find(doc.text) if model.rules is not None else []
        t2 = time.process_time()
        context = fx.context_features(tok, rules)
        t3 = time.process_time()
        emissions = model._scorer.emissions([t.text for t in tok.tokens], tok.sentences, context)
        t4 = time.process_time()
        seqs = sequence_bounds(tok, model.config.sequence)
        forward_backward(emissions, seqs, model.weights.transitions)
        t5 = time.process_time()
        viterbi(emissions, seqs, model.weights.transitions, bias=-1.0, o_index=model.o_index)
        t6 = time.process_time()
        for key, value in zip(stages, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t6 - t5)):
            stages[key] += value

    encoded = [model.encode(d) for d in (dev * 2)[:200]]
    redecode = []
    for enc in encoded[:100]:
        t = time.perf_counter()
        model.decode(enc, bias=-1.3)
        redecode.append((time.perf_counter() - t) * 1000)
    grid = bias_grid(-4.0, 2.0, 0.25)
    start = clock()
    for enc in encoded:
        model.decode_many(enc, grid)
    curve_wall, curve_cpu = since(start)

    print(json.dumps({
        "corpus": args.corpus,
        "documents": len(dev),
        "mean_chars_per_doc": round(chars),
        "model": args.model,
        "model_load_s": round(load_wall, 2),
        "end_to_end": passes,
        "stage_cpu_ms_per_doc": {k: round(v / len(dev) * 1000, 2) for k, v in stages.items()},
        "redecode_ms_median": round(statistics.median(redecode), 2),
        "redecode_ms_p90": round(sorted(redecode)[int(0.9 * len(redecode))], 2),
        "bias_curve_200_notes": {"biases": len(grid), "wall_s": round(curve_wall, 2), "cpu_s": round(curve_cpu, 2)},
        "load_average": os.getloadavg(),
    }))


if __name__ == "__main__":
    main()
