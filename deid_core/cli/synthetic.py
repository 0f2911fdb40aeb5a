"""``deid-workbench synth``: write a synthetic annotated corpus as JSONL."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from tqdm import tqdm

from deid_core.corpus import write_jsonl
from deid_core.synthetic import (
    FAMILIES,
    KINDS,
    REALISTIC,
    SHORTHAND_KINDS,
    SUPPORTED_LANGUAGES,
    iter_notes,
)


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "synth",
        help="generate synthetic clinical notes with gold PHI spans",
        description=(
            "Generate deterministic synthetic clinical notes with gold PHI spans: English in"
            " i2b2 2014 labels, Spanish (--lang es) in MEDDOCAN labels. Output is flagged"
            " synthetic in each document's meta and by the 'synth-' id prefix."
        ),
    )
    p.add_argument("--n", type=int, default=200, help="number of notes (default 200)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--lang", default="en", choices=SUPPORTED_LANGUAGES, help="language (default en)")
    p.add_argument(
        "--kinds", nargs="+", default=None, metavar="KIND",
        help=f"restrict note kinds (en: {', '.join(KINDS)}, and the shorthand genres"
             f" {', '.join(SHORTHAND_KINDS)}; es: caso_clinico, informe_alta)",
    )
    p.add_argument("--styles", type=float, default=None, metavar="SHARE",
                   help="share of English notes given a surface style (lowercase, capitals, sparse"
                        " punctuation, abbreviations, signature block); default 0")
    p.add_argument("--families", choices=FAMILIES, default="all",
                   help="template families: all (default), or the disjoint train and dev families")
    p.add_argument("--realistic", action="store_true",
                   help="every English genre and styles on 60%% of notes (what the starter model trains on)")
    p.add_argument(
        "--notes-per-patient", nargs=2, type=int, default=(1, 4), metavar=("LOW", "HIGH"),
        help="notes per patient, drawn uniformly (default 1 4)",
    )
    p.add_argument("--out", required=True, help="output JSONL path (written atomically)")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.n < 0:
        print("error: --n must be >= 0", file=sys.stderr)
        return 2
    low, high = args.notes_per_patient
    if low < 1 or high < low:
        print("error: --notes-per-patient needs 1 <= LOW <= HIGH", file=sys.stderr)
        return 2
    kinds = args.kinds or (REALISTIC["kinds"] if args.realistic else None)
    styles = args.styles if args.styles is not None else (REALISTIC["styles"] if args.realistic else 0.0)
    docs = iter_notes(
        args.n, seed=args.seed, lang=args.lang, kinds=kinds, notes_per_patient=(low, high),
        styles=styles, families=args.families,
    )
    bar = tqdm(docs, total=args.n, unit="note", disable=args.no_progress, file=sys.stderr)
    count = write_jsonl(args.out, bar)
    print(f"wrote {count} synthetic notes to {args.out}", file=sys.stderr)
    return 0
