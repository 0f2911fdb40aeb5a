"""De-identification and export speed, leak-check outcome and date-parse coverage: one JSON object.

For the synthetic English corpus (``--n`` notes) and MEDDOCAN dev (Spanish,
gold spans as the reviewed layer), in surrogate mode:

- ``deid_docs_per_s``: ``deidentify_document`` throughput (single process);
- ``leakcheck_s``: leak check of the whole corpus (document scope), and its
  outcome (``leaks``, ``cross_document`` with ``--corpus-scope``);
- ``fallback_share``: share of spans whose surrogate could not be made (mostly
  dates that do not parse) and were tagged instead, by label;
- ``export_all_formats_s``: a full ``export_corpus`` with every format.

    .venv/bin/python bench/export_speed.py [--n 1000] [--meddocan ../shared/data/meddocan/dev.jsonl]
"""

from __future__ import annotations

import argparse
import json
import resource
import tempfile
import time
from collections import Counter
from pathlib import Path

from deid_core.corpus import read_jsonl
from deid_core.protect.export import FORMATS, ExportConfig, ExportItem, export_corpus
from deid_core.protect.leakcheck import check_deidentified
from deid_core.protect.operators import OperatorConfig, deidentify_document
from deid_core.spans import Document
from deid_core.synthetic import generate_notes

SECRET = b"bench-secret-0123456789abcdef"


def run(name: str, docs: list[Document], lang: str, scheme: str, scope: str) -> dict[str, object]:
    config = OperatorConfig(lang=lang, scheme=scheme)
    gen = config.generator(SECRET)
    t0 = time.perf_counter()
    results = [
        deidentify_document(
            d, d.spans, config=config, secret=SECRET,
            patient_key=d.meta.get("patient_id"), generator=gen,
        )
        for d in docs
    ]
    deid_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    report = check_deidentified(list(zip(docs, results)), lang=lang, scope=scope)  # type: ignore[arg-type]
    leak_s = time.perf_counter() - t0
    spans = Counter(d.original.label for r in results for d in r.decisions)
    fallback = Counter(d.original.label for r in results for d in r.decisions if d.operator == "tag")
    with tempfile.TemporaryDirectory() as tmp:
        items = [ExportItem(d, patient_key=d.meta.get("patient_id")) for d in docs]
        t0 = time.perf_counter()
        export_corpus(
            items, Path(tmp) / "out",
            config=ExportConfig(config, FORMATS, allow_leaks=True, leak_scope=scope),  # type: ignore[arg-type]
            secret=SECRET,
        )
        export_s = time.perf_counter() - t0
    summary = report.to_dict()
    return {
        "corpus": name,
        "documents": len(docs),
        "spans": sum(spans.values()),
        "deid_s": round(deid_s, 3),
        "deid_docs_per_s": round(len(docs) / deid_s, 1),
        "leakcheck_s": round(leak_s, 3),
        "leak_candidates": summary["candidates"],
        "leak_skipped": summary["skipped"],
        "leaks": summary["leaks"],
        "cross_document": summary["cross_document"],
        "possible_common_nouns": summary["possible_common_nouns"],
        "coincidences_in_surrogates": summary["coincidences_in_surrogates"],
        "fallback_share": round(sum(fallback.values()) / max(1, sum(spans.values())), 4),
        "fallback_by_label": dict(fallback.most_common()),
        "export_all_formats_s": round(export_s, 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--meddocan", default=str(Path(__file__).resolve().parents[2] / "shared/data/meddocan/dev.jsonl"))
    ap.add_argument("--corpus-scope", action="store_true", help="also search other documents")
    args = ap.parse_args()
    scope = "corpus" if args.corpus_scope else "document"
    out: dict[str, object] = {"scope": scope, "runs": []}
    runs: list[dict[str, object]] = []
    runs.append(run("synthetic_en", generate_notes(args.n, seed=args.seed), "en", "i2b2_2014", scope))
    if Path(args.meddocan).exists():
        runs.append(run("meddocan_dev", read_jsonl(args.meddocan), "es", "meddocan", scope))
    out["runs"] = runs
    out["max_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
