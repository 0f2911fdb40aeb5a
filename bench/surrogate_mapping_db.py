"""Cost of the database surrogate mapping for one export: one JSON object.

The entries of ``--n`` synthetic notes (de-identified in surrogate mode) are
written to a new project's mapping on SQLite and PostgreSQL, the way
``export_corpus`` does (``DbSurrogateMapping.staged``: insert with ON CONFLICT
DO NOTHING, compare stored surrogates, count collisions). On SQLite that
transaction holds the write lock, so ``staged_first_s`` is how long reviewers'
saves may wait during an export. Then: the same entries again (a re-export),
8 threads recording overlapping halves at once, and writing the mapping file.

    .venv/bin/python bench/surrogate_mapping_db.py [--n 1000] [--no-postgres]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _store_common import postgres_schema  # noqa: E402

from deid_core.protect.export import recordable_entries  # noqa: E402
from deid_core.protect.operators import OperatorConfig, deidentify_document  # noqa: E402
from deid_core.protect.surrogate_map import export_mapping  # noqa: E402
from deid_core.protect.surrogate_map_db import DbSurrogateMapping  # noqa: E402
from deid_core.store import open_store  # noqa: E402
from deid_core.store.repository import create_project  # noqa: E402
from deid_core.synthetic import generate_notes  # noqa: E402

SECRET = b"bench-secret-0123456789abcdef"


def entries_for(n: int) -> tuple[list, int]:
    docs = generate_notes(n, seed=0)
    config = OperatorConfig(lang="en", scheme="i2b2_2014")
    gen = config.generator(SECRET)
    results = [
        deidentify_document(d, d.spans, config=config, secret=SECRET,
                            patient_key=d.meta.get("patient_id"), generator=gen)
        for d in docs
    ]
    return recordable_entries(results, SECRET), sum(len(d.spans) for d in docs)


def run(url: str, entries: list, tmp: Path) -> dict[str, object]:
    engine = open_store(url)
    try:
        mapping = DbSurrogateMapping(engine, create_project(engine, "bench").id)
        t0 = time.perf_counter()
        with mapping.staged(entries) as first:
            pass
        t1 = time.perf_counter()
        with mapping.staged(entries) as again:
            pass
        t2 = time.perf_counter()
        other = DbSurrogateMapping(engine, create_project(engine, "bench-threads").id)
        half = len(entries) // 2
        errors: list[str] = []

        def work(t: int) -> None:
            mine = entries[(t % 2) * (half // 2):][:half]
            try:
                other.record(mine[::-1] if t % 3 else mine)
            except Exception as exc:  # noqa: BLE001 - reported
                errors.append(type(exc).__name__)

        threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
        t3 = time.perf_counter()
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        t4 = time.perf_counter()
        written = export_mapping(mapping, tmp / f"{engine.dialect.name}.jsonl", role="admin")
        t5 = time.perf_counter()
        return {
            "rows": len(mapping),
            "staged_first_s": round(t1 - t0, 3),
            "inserted_first": first.result.inserted,
            "collisions": len(first.collisions),
            "staged_again_s": round(t2 - t1, 3),
            "inserted_again": again.result.inserted,
            "threads_8_overlapping_s": round(t4 - t3, 3),
            "threads_errors": errors,
            "threads_rows": len(other),
            "export_file_s": round(t5 - t4, 3),
            "export_file_entries": written,
        }
    finally:
        engine.dispose()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--no-postgres", action="store_true")
    args = ap.parse_args()
    t0 = time.perf_counter()
    entries, spans = entries_for(args.n)
    out: dict[str, object] = {
        "notes": args.n, "spans": spans, "entries": len(entries),
        "distinct_keys": len({e.key for e in entries}),
        "deidentify_s": round(time.perf_counter() - t0, 2),
    }
    with tempfile.TemporaryDirectory() as tmp:
        out["sqlite"] = run(f"sqlite:///{Path(tmp) / 'bench.db'}", entries, Path(tmp))
        if not args.no_postgres:
            with postgres_schema() as url:
                out["postgresql"] = run(url, entries, Path(tmp))
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
