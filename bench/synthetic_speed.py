"""Synthetic note generator speed, memory and gold-span shape: prints one JSON object.

``generate_1000_s`` builds 1,000 notes in memory; ``stream_<big>_s`` streams
``--big`` notes through ``iter_notes`` without keeping them (the Dask
benchmark's use). ``max_rss_mb`` is the process peak after both.
Alignment is checked against deid_core.engine.tokenize on the 1,000 notes.

    .venv/bin/python bench/synthetic_speed.py [--n 1000] [--big 20000] [--seed 0] [--lang es]
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from collections import Counter

from deid_core.engine.tagging import alignment_upper_bound
from deid_core.engine.tokenize import tokenize
from deid_core.synthetic import generate_notes, iter_notes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--big", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--lang", default="en")
    args = ap.parse_args()

    t0 = time.perf_counter()
    docs = generate_notes(args.n, seed=args.seed, lang=args.lang)
    gen_s = time.perf_counter() - t0

    t0 = time.perf_counter()
    aligned = sum(alignment_upper_bound(tokenize(d.text, args.lang).tokens, d.spans) == 1.0 for d in docs)
    tok_s = time.perf_counter() - t0

    labels = Counter(s.label for d in docs for s in d.spans)
    kinds = Counter(d.meta["kind"] for d in docs)
    chars = sum(len(d.text) for d in docs)
    n_spans = sum(labels.values())
    patients = len({d.meta["patient_id"] for d in docs})

    t0 = time.perf_counter()
    big_chars = sum(len(d.text) for d in iter_notes(args.big, seed=args.seed, lang=args.lang))
    big_s = time.perf_counter() - t0

    print(json.dumps({
        "n": args.n,
        "seed": args.seed,
        "lang": args.lang,
        f"generate_{args.n}_s": round(gen_s, 3),
        "notes_per_s": round(args.n / gen_s, 1),
        f"stream_{args.big}_s": round(big_s, 3),
        f"stream_{args.big}_mchars": round(big_chars / 1e6, 2),
        "max_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "tokenize_check_s": round(tok_s, 3),
        "notes_fully_aligned": aligned,
        "mean_chars_per_note": round(chars / max(1, args.n), 1),
        "mean_spans_per_note": round(n_spans / max(1, args.n), 2),
        "patients": patients,
        "kinds": dict(sorted(kinds.items())),
        "labels_present": len(labels),
        "label_counts": dict(labels.most_common()),
    }, indent=1))


if __name__ == "__main__":
    main()
