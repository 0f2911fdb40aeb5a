"""Import 10,000 generated notes (JSONL, gold spans) into SQLite and PostgreSQL; prints JSON.

    python bench/store_import.py [--n 10000] [--backends sqlite,postgresql]

Each backend runs in a fresh child process so peak memory (ru_maxrss) is the
import's own: ``peak_rss_mb`` is the child's peak, ``rss_growth_mb`` its growth
during the import. Target: >= 500 notes/s on SQLite. PostgreSQL URL from
DEID_BENCH_POSTGRES_URL / DEID_TEST_POSTGRES_URL (default: local ``test`` db).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def child(backend: str, corpus: str, n: int) -> dict:
    from contextlib import nullcontext

    from _store_common import postgres_schema

    from deid_core.store import open_store
    from deid_core.store import repository as repo
    from deid_core.store.importers import import_paths

    with tempfile.TemporaryDirectory() as tmp:
        ctx = postgres_schema() if backend == "postgresql" else nullcontext(
            f"sqlite:///{Path(tmp) / 'bench.db'}")
        with ctx as url:
            engine = open_store(url)
            repo.create_project(engine, "bench")
            base = _rss_mb()
            cpu0 = _cpu_s()
            t0 = time.perf_counter()
            result = import_paths(engine, "bench", [corpus], fmt="jsonl", annotations="gold")
            seconds = time.perf_counter() - t0
            cpu = _cpu_s() - cpu0
            peak = _rss_mb()
            t1 = time.perf_counter()
            again = import_paths(engine, "bench", [corpus], fmt="jsonl", annotations="gold")
            dup_seconds = time.perf_counter() - t1
            engine.dispose()
    assert result.n_imported == n and again.n_duplicates == n
    return {
        "notes": result.n_imported, "spans": result.n_spans, "seconds": round(seconds, 3),
        "notes_per_s": round(n / seconds, 1), "client_cpu_seconds": round(cpu, 3),
        "notes_per_client_cpu_s": round(n / cpu, 1), "peak_rss_mb": round(peak, 1),
        "rss_growth_mb": round(peak - base, 1),
        "reimport_all_duplicates_seconds": round(dup_seconds, 3),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--backends", default="sqlite,postgresql")
    ap.add_argument("--child", nargs=2, metavar=("BACKEND", "CORPUS"))
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child[0], args.child[1], args.n)))
        return
    from _store_common import notes

    from deid_core.corpus import write_jsonl

    docs, generator = notes(args.n)
    out: dict = {"bench": "store_import", "notes": args.n, "generator": generator,
                 "chars": sum(len(d.text) for d in docs), "target_sqlite_notes_per_s": 500}
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "notes.jsonl"
        write_jsonl(corpus, docs)
        out["corpus_mb"] = round(corpus.stat().st_size / 1e6, 1)
        del docs
        for backend in args.backends.split(","):
            proc = subprocess.run(
                [sys.executable, __file__, "--n", str(args.n), "--child", backend, str(corpus)],
                capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                out[backend] = {"error": proc.stderr.strip().splitlines()[-1:]}
            else:
                out[backend] = json.loads(proc.stdout.strip().splitlines()[-1])
    sqlite = out.get("sqlite", {})
    if "notes_per_s" in sqlite:
        out["sqlite_target_met"] = sqlite["notes_per_s"] >= 500
    print(json.dumps(out))


if __name__ == "__main__":
    main()
