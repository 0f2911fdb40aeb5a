"""A reviewer saving while a large import runs: save latency and failed saves; prints JSON.

    python bench/import_contention.py [--n 10000] [--backends sqlite,postgresql]

For each backend: a fresh store with a 200-note review pool; a child process
imports ``--n`` generated notes (JSONL, gold spans) through ``import_paths``
while this process saves reviews (``get_document`` + ``save_review``) one
after another until the import ends. Reported: import wall and CPU time, the
number of saves, failed saves (any exception), and save latency p50 / p95 /
max. On SQLite the import commits chunk by chunk, so a save waits at most for
one chunk's write transaction; before issue 17 one transaction held the write
lock for the whole import and a save failed after the 60 s busy timeout.
PostgreSQL URL from DEID_BENCH_POSTGRES_URL / DEID_TEST_POSTGRES_URL.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

POOL = 200


def _importer(url: str, corpus: str) -> None:
    """The child: import the corpus as the admin, print wall and CPU seconds."""
    from deid_core.store import open_store
    from deid_core.store.importers import import_paths

    engine = open_store(url)
    cpu0, t0 = time.process_time(), time.perf_counter()
    result = import_paths(engine, "bench", [corpus], fmt="jsonl", annotations="gold", actor="ada")
    print(json.dumps({"imported": result.n_imported, "seconds": round(time.perf_counter() - t0, 2),
                      "cpu_seconds": round(time.process_time() - cpu0, 2)}))


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def run(backend: str, corpus: str) -> dict:
    from _store_common import postgres_schema

    from deid_core.spans import Document, Span
    from deid_core.store import open_store
    from deid_core.store import repository as repo
    from deid_core.store.users import create_user

    with tempfile.TemporaryDirectory() as tmp:
        ctx = postgres_schema() if backend == "postgresql" else nullcontext(
            f"sqlite:///{Path(tmp) / 'bench.db'}")
        with ctx as url:
            engine = open_store(url)
            create_user(engine, "ada", "bench-password-1", role="admin")
            create_user(engine, "rita", "bench-password-2", role="reviewer")
            repo.create_project(engine, "bench", actor="ada")
            pool = [Document(f"pool-{i}", f"Pool note {i}: seen by Dr Pool {i} today.")
                    for i in range(POOL)]
            repo.import_documents(engine, "bench", pool, actor="ada")
            ids = [repo.find_document(engine, "bench", d.id) for d in pool]
            child = subprocess.Popen(
                [sys.executable, __file__, "--child", url, corpus],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            latencies: list[float] = []
            failures: dict[str, int] = {}
            cpu0 = time.process_time()
            k = 0
            while child.poll() is None:
                doc_id = ids[k % len(ids)]
                k += 1
                t0 = time.perf_counter()
                try:
                    layers = repo.get_document(engine, doc_id)
                    saved = repo.save_review(engine, doc_id, "rita", [Span(0, 4, "HOSPITAL")],
                                             layers.version)
                    if not saved.ok:
                        failures["conflict"] = failures.get("conflict", 0) + 1
                except Exception as exc:  # noqa: BLE001 - counted by class
                    failures[type(exc).__name__] = failures.get(type(exc).__name__, 0) + 1
                latencies.append(time.perf_counter() - t0)
            reviewer_cpu = time.process_time() - cpu0
            out, err = child.communicate()
            engine.dispose()
    if child.returncode != 0:
        return {"error": err.strip().splitlines()[-1:]}
    imported = json.loads(out.strip().splitlines()[-1])
    ms = [1000 * x for x in latencies]
    return {
        "import": imported,
        "saves": len(ms), "failed_saves": sum(failures.values()), "failures": failures,
        "save_ms_p50": round(statistics.median(ms), 1) if ms else None,
        "save_ms_p95": round(_percentile(ms, 0.95), 1) if ms else None,
        "save_ms_max": round(max(ms), 1) if ms else None,
        "reviewer_cpu_seconds": round(reviewer_cpu, 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--backends", default="sqlite,postgresql")
    ap.add_argument("--child", nargs=2, metavar=("URL", "CORPUS"))
    args = ap.parse_args()
    if args.child:
        _importer(*args.child)
        return
    from _store_common import notes

    from deid_core.corpus import write_jsonl

    docs, generator = notes(args.n)
    result: dict = {"bench": "import_contention", "notes": args.n, "generator": generator,
                    "load_average_start": [round(x, 2) for x in os.getloadavg()]}
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "notes.jsonl"
        write_jsonl(corpus, docs)
        del docs
        result["corpus_mb"] = round(corpus.stat().st_size / 1e6, 1)
        for backend in args.backends.split(","):
            result[backend] = run(backend, str(corpus))
    result["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(result))


if __name__ == "__main__":
    main()
