"""Export speed and memory at scale, with the leak check and propagation: one JSON object.

Writes ``--n`` synthetic English notes (gold spans as the reviewed layer) to a
temporary JSONL file, then exports them with ``export_corpus`` reading that file
on each pass, so the corpus itself is never held in memory: what is measured is
the export's own memory (the set of PHI strings, the mapping entries, the ids).
Surrogate mode, leak scope ``corpus`` (the default) unless ``--scope``.

Prints wall and CPU seconds per phase (gathering PHI strings, de-identifying +
masking + leak-checking, writing the formats), documents per second, peak RSS
of the process, the number of known strings, propagated spans and leaks.
With ``--meddocan PATH`` it also exports MEDDOCAN dev (Spanish) the same way.

    .venv/bin/python bench/export_speed.py --n 10000 [--scope corpus] [--formats jsonl]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from deid_core.corpus import iter_jsonl, write_jsonl
from deid_core.protect.export import ExportConfig, ExportItem, export_corpus
from deid_core.protect.operators import OperatorConfig
from deid_core.synthetic import iter_notes

SECRET = b"bench-secret-0123456789abcdef"


class JsonlItems:
    """Export items read from a JSONL file on every pass (nothing kept in memory)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __iter__(self) -> Iterator[ExportItem]:
        for doc in iter_jsonl(self.path):
            yield ExportItem(doc, patient_key=doc.meta.get("patient_id"), reviewers=("bench",))


def _rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def run(name: str, path: Path, lang: str, scheme: str, scope: str, formats: tuple[str, ...]) -> dict[str, object]:
    phases: list[tuple[str, float, float]] = []

    def progress(message: str, _fraction: float) -> None:
        if not phases or phases[-1][0] != message:
            phases.append((message, time.perf_counter(), time.process_time()))

    config = ExportConfig(
        OperatorConfig(lang=lang, scheme=scheme), formats, leak_scope=scope, allow_leaks=True,  # type: ignore[arg-type]
    )
    rss_before = _rss_mb()
    with tempfile.TemporaryDirectory() as tmp:
        t0, c0 = time.perf_counter(), time.process_time()
        result = export_corpus(JsonlItems(path), Path(tmp) / "out", config=config, secret=SECRET, progress=progress)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    phases.append(("end", t0 + wall, c0 + cpu))
    timing = {
        msg: {"wall_s": round(phases[i + 1][1] - t, 2), "cpu_s": round(phases[i + 1][2] - c, 2)}
        for i, (msg, t, c) in enumerate(phases[:-1])
        if msg != "done"
    }
    m = result.manifest
    return {
        "corpus": name,
        "documents": m["documents"],
        "spans": m["spans"],
        "scope": scope,
        "formats": list(formats),
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "docs_per_cpu_s": round(m["documents"] / cpu, 1) if cpu else None,
        "phases": timing,
        "known_strings": m["propagation"]["known_strings"],
        "propagated_spans": sum(m["propagation"]["spans_per_label"].values()),
        "leaks": m["leak_check"]["leaks"],
        "leaks_by_match": m["leak_check"]["leaks_by_match"],
        "coincidences_in_surrogates": m["leak_check"]["coincidences_in_surrogates"],
        "possible_common_nouns": m["leak_check"]["possible_common_nouns"],
        "peak_rss_mb_before": rss_before,
        "peak_rss_mb_after": _rss_mb(),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--scope", choices=("document", "patient", "corpus"), default="corpus")
    ap.add_argument("--formats", default="jsonl", help="comma-separated export formats")
    ap.add_argument("--meddocan", default=None, help="also export this MEDDOCAN JSONL (e.g. dev.jsonl)")
    args = ap.parse_args()
    formats = tuple(f for f in args.formats.split(",") if f)
    out: dict[str, object] = {"load_average": os.getloadavg()}
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "notes.jsonl"
        t0 = time.perf_counter()
        write_jsonl(path, iter_notes(args.n, seed=args.seed))
        out["generate_s"] = round(time.perf_counter() - t0, 1)
        out["input_mb"] = round(path.stat().st_size / 1e6, 1)
        runs.append(run(f"synthetic_en_{args.n}", path, "en", "i2b2_2014", args.scope, formats))
    if args.meddocan and Path(args.meddocan).exists():
        runs.append(run("meddocan", Path(args.meddocan), "es", "meddocan", args.scope, formats))
    out["runs"] = runs
    out["load_average_end"] = os.getloadavg()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
