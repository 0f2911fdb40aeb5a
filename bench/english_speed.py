"""End-to-end tagging speed of the English starter on realistic notes, one core: prints JSON.

    .venv/bin/python bench/english_speed.py [--n 300] [--model DIR]

``bench/engine_speed.py`` measures MEDDOCAN (long Spanish notes). This is the
English counterpart for issue 12's floor (>= 200k characters/s): the bundled
starter (built on first use) tags ``--n`` notes from the generator's dev
template families from a fresh model ("cold": every word new to the emission
cache), then tags ``--n`` train-family notes and times ``--n`` other dev
notes ("after warm-up", the state of a long run). The start-up heap is frozen
as the CLI does. CPU seconds are the figure to compare on a shared machine.
``--model`` pins a model directory (the starter's cache key hashes the
engine's code, so comparing two versions of the engine on one model needs it);
``load_cpu_s`` is the model's load time, paid once before the cold notes
(it includes loading the decoder's compiled kernels), and
``cold_with_load_chars_per_cpu_s`` the cold figure with the load counted in:
what a user who loads the model to tag these notes pays.
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
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from deid_core.engine.model import DeidModel, freeze_loaded_heap  # noqa: E402
from deid_core.synthetic import REALISTIC, generate_notes  # noqa: E402
from deid_core.synthetic.starter import ensure_starter  # noqa: E402


def timed(model: DeidModel, docs: list) -> dict[str, Any]:  # type: ignore[type-arg]
    chars = sum(len(d.text) for d in docs)
    c0, w0 = time.process_time(), time.perf_counter()
    for d in docs:
        model.predict(d)
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    return {"notes": len(docs), "chars": chars, "cpu_s": round(cpu, 3), "chars_per_cpu_s": round(chars / cpu),
            "chars_per_wall_s": round(chars / wall)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--model", type=Path, help="model directory (default: the English starter)")
    args = ap.parse_args()
    path = args.model or ensure_starter("en")
    c0 = time.process_time()
    model = DeidModel.load(path)
    load_cpu = time.process_time() - c0
    warm = generate_notes(args.n, seed=555, families="train", **REALISTIC)
    cold_docs = generate_notes(args.n, seed=777_001, families="dev", **REALISTIC)
    later_docs = generate_notes(args.n, seed=777_002, families="dev", **REALISTIC)
    freeze_loaded_heap()
    out: dict[str, object] = {"model": model.version, "load_average": os.getloadavg(),
                              "load_cpu_s": round(load_cpu, 3)}
    out["cold"] = timed(model, cold_docs)
    cold = out["cold"]
    out["cold_with_load_chars_per_cpu_s"] = round(cold["chars"] / (load_cpu + cold["cpu_s"]))
    for d in warm:
        model.predict(d)
    out["after_warm_up"] = timed(model, later_docs)
    out["load_average_end"] = os.getloadavg()
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
