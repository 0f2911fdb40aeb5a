"""A model's precision/recall curve on groups of English challenge sets: prints JSON.

    .venv/bin/python bench/english_curve.py --model DIR --groups 63-77 2-37 38-62 78-81
    .venv/bin/python bench/english_curve.py --model DIR --groups 78-81 --presidio --grid 0 -1 -2

Two starters are compared at equal precision, not at their recorded recall biases: a change to
the generator moves the recall bias the starter records (it keeps 97.5 % of the generator dev
families' characters), which moves the operating point along the curve without making the curve
better. For each group (``A-B`` or ``N``, set 1 is ``english_challenge.jsonl``, joined with
commas: ``2-37,41``) the bench pools the notes and reports character recall and precision over
non-whitespace characters (``visible_char_prf``, whatever the labels) at every bias of
``--grid`` and at the model's recorded recall bias (with recall per miss category there), and the best recall of
a grid point whose precision reaches each of ``--at-precision``. ``--presidio`` adds
presidio-synth dev (read from ``--data``, never copied). Each note is encoded once and decoded at
every bias (``DeidModel.decode_many``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from build_challenge_set import set_stem  # noqa: E402

from deid_core.corpus import read_jsonl  # noqa: E402
from deid_core.engine.model import DeidModel  # noqa: E402
from deid_core.engine.recall_bias import RECALL_BIAS_KEY  # noqa: E402
from deid_core.evaluation.visible_chars import recall_per_category, visible_char_prf  # noqa: E402
from deid_core.spans import Document  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures"
DATA = Path("/work/shared/data")
GRID = (0.0, -0.5, -1.0, -1.25, -1.5, -1.75, -2.0, -2.5)


def set_numbers(group: str) -> list[int]:
    """``"2-37,41"`` -> [2, ..., 37, 41]."""
    out: list[int] = []
    for part in group.split(","):
        first, _, last = part.strip().partition("-")
        out.extend(range(int(first), int(last or first) + 1))
    return out


def read_group(group: str) -> list[Document]:
    docs: list[Document] = []
    for n in set_numbers(group):
        path = FIXTURES / f"{set_stem(n)}.jsonl"
        if not path.is_file():
            raise SystemExit(f"{path.relative_to(ROOT)}: no such challenge set (group {group})")
        docs.extend(read_jsonl(path))
    return docs


def recall_at_precision(points: list[dict[str, float]], floor: float) -> float | None:
    reached = [p["recall"] for p in points if p["precision"] >= floor]
    return max(reached) if reached else None


def curve(model: DeidModel, docs: list[Document], grid: list[float], recorded: float | None,
          floors: list[float]) -> dict[str, Any]:
    biases = sorted({*grid, *([recorded] if recorded is not None else [])}, reverse=True)
    per_note = [model.decode_many(model.encode(d), biases) for d in docs]
    points, categories, at_recorded = [], None, None
    for k, bias in enumerate(biases):
        pred = [Document(d.id, d.text, tuple(p[k].spans)) for d, p in zip(docs, per_note)]
        prf = visible_char_prf(docs, pred)
        if bias in grid:
            points.append({"bias": bias, "recall": round(prf["recall"], 4), "precision": round(prf["precision"], 4)})
        if bias == recorded:
            at_recorded = {"bias": bias, "recall": round(prf["recall"], 4), "precision": round(prf["precision"], 4)}
            if all("categories" in d.meta for d in docs):
                categories = recall_per_category(docs, pred)
    out: dict[str, Any] = {
        "documents": len(docs),
        "points": points,
        "recall_at_precision": {f"{f:g}": recall_at_precision(points, f) for f in floors},
    }
    if at_recorded is not None:
        out["at_recorded_bias"] = at_recorded
    if categories is not None:
        out["recall_per_category_at_recorded_bias"] = categories
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", type=Path, required=True, help="a model directory (e.g. a starter)")
    ap.add_argument("--groups", nargs="+", default=["2-37", "38-62", "63-77", "78-81"])
    ap.add_argument("--grid", nargs="+", type=float, default=list(GRID), help="biases (default %(default)s)")
    ap.add_argument("--at-precision", nargs="+", type=float, default=[0.9, 0.85])
    ap.add_argument("--presidio", action="store_true", help="add presidio-synth dev")
    ap.add_argument("--data", type=Path, default=DATA, help=f"benchmark corpora (default {DATA})")
    args = ap.parse_args()
    model = DeidModel.load(args.model)
    recorded = model.metadata.get(RECALL_BIAS_KEY)
    recorded = float(recorded) if recorded is not None else None
    groups = {g: read_group(g) for g in args.groups}
    if args.presidio:
        path = args.data / "presidio-synth" / "dev.jsonl"
        if not path.is_file():
            raise SystemExit(f"{path}: not found (--data)")
        groups["presidio-synth-dev"] = read_jsonl(path)
    result = {
        "model": model.version,
        "recorded_recall_bias": recorded,
        "groups": {g: curve(model, docs, args.grid, recorded, args.at_precision) for g, docs in groups.items()},
    }
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
