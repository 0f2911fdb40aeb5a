"""Build the English starter model from scratch and measure it. Prints one JSON object.

- ``build``: CPU seconds (``time.process_time``, one process, the CRF is
  single-threaded) and wall seconds of ``ensure_starter("en")`` in an empty
  cache, the model directory's size, and the load average before and after;
- ``recorded``: what the starter recorded about itself (``recall_bias`` and the
  figures on its 150 dev notes that chose it);
- ``dev``: char recall and precision over non-whitespace characters on a
  larger, separate set of dev-family notes (other patients: ``--dev-seed``) at
  the default bias (0) and at the recorded recall bias, overall, per genre,
  per surface style and per label (recall).

The dev families share no worded template with the training families, so
these figures are on phrasing the starter has not seen; they are still
synthetic notes and say nothing about real ones (issue 12's targets are on
real ICU notes the project cannot have).

    PYTHONPATH=. .venv/bin/python bench/starter_build.py [--dev-n 300] [--dev-seed 424242]
        [--size default|tiny] [--seed N] [--save DIR]

``--seed`` trains the recipe with another generator and trainer seed (``build_starter(seed=)``,
not cached): a change to the generator is judged on several such starters, since one retrain
moves the figures as much as many changes do (docs/engine.md, "Session 20"). ``--save`` keeps
the model, for ``bench/english_curve.py --model``.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections import defaultdict
from pathlib import Path


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dev-n", type=int, default=300)
    ap.add_argument("--dev-seed", type=int, default=424_242)
    ap.add_argument("--size", default="default", help="starter size (tiny is for tests)")
    ap.add_argument("--seed", type=int, help="another generator and trainer seed than the recipe's")
    ap.add_argument("--save", type=Path, help="keep the model in this (new) directory")
    args = ap.parse_args()
    if args.save is not None and args.save.exists():
        raise SystemExit(f"{args.save}: already exists; --save makes a new model directory")

    with tempfile.TemporaryDirectory(prefix="deid-starter-bench-") as tmp:
        os.environ["DEID_STARTER_DIR"] = tmp
        os.environ["DEID_STARTER_SIZE"] = args.size
        from deid_core.engine.model import DeidModel
        from deid_core.engine.recall_bias import RECALL_BIAS_KEY
        from deid_core.evaluation.visible_chars import visible_char_prf
        from deid_core.spans import Document
        from deid_core.synthetic import generate_notes
        from deid_core.synthetic.starter import build_starter, ensure_starter, recipe

        load_before = _load()
        cpu0, wall0 = time.process_time(), time.perf_counter()
        if args.seed is None:
            path = ensure_starter("en")
        else:
            path = build_starter("en", seed=args.seed).save(args.save or Path(tmp) / f"en-seed-{args.seed}")
        build = {
            "cpu_seconds": round(time.process_time() - cpu0, 1),
            "wall_seconds": round(time.perf_counter() - wall0, 1),
            "model_bytes": _dir_bytes(path),
            "files": sorted(p.name for p in path.iterdir()),
            "load_before": load_before,
            "load_after": _load(),
        }
        model = DeidModel.load(path)
        if args.save is not None and path != args.save:  # the cached starter: copy it out
            model.save(args.save)
        meta = model.metadata
        r = recipe("en")
        recall_bias = float(meta[RECALL_BIAS_KEY])

        gold = generate_notes(args.dev_n, seed=args.dev_seed, **r.dev_options())
        cpu1 = time.process_time()
        preds: dict[float, list[Document]] = {0.0: [], recall_bias: []}
        for doc in gold:
            enc = model.encode(Document(doc.id, doc.text, (), doc.meta))
            for b in preds:
                preds[b].append(model.decode(enc, b).to_document(doc))
        tag_cpu = time.process_time() - cpu1
        chars = sum(len(d.text) for d in gold)

        def breakdown(bias: float) -> dict[str, object]:
            out: dict[str, object] = {"all": visible_char_prf(gold, preds[bias])}
            for key in ("kind", "styles"):
                groups: dict[str, list[int]] = defaultdict(list)
                for i, d in enumerate(gold):
                    values = d.meta.get(key) or ["none"]
                    for v in values if isinstance(values, list) else [values]:
                        groups[str(v)].append(i)
                out[f"by_{key}"] = {
                    k: {m: round(v, 4) for m, v in visible_char_prf(
                        [gold[i] for i in idx], [preds[bias][i] for i in idx]).items()
                        if m in ("recall", "precision")}
                    for k, idx in sorted(groups.items())
                }
            labels: dict[str, list[int]] = defaultdict(lambda: [0, 0])
            for g, p in zip(gold, preds[bias]):
                covered = {i for s in p.spans for i in range(s.start, s.end)}
                for s in g.spans:
                    idx = [i for i in range(s.start, s.end) if not g.text[i].isspace()]
                    labels[s.label][0] += len(idx)
                    labels[s.label][1] += sum(1 for i in idx if i in covered)
            out["recall_by_label"] = {k: round(c / n, 4) for k, (n, c) in sorted(labels.items()) if n}
            return out

        print(json.dumps({
            "recipe": {"n_train": r.n_train, "seed": meta["corpus"]["seed"], "options": r.options,
                       "max_iterations": r.max_iterations, "size": args.size},
            "build": build,
            "saved": str(args.save) if args.save is not None else None,
            "recorded": {"recall_bias": recall_bias, "recall_bias_info": meta.get("recall_bias_info"),
                         "training_seconds": meta.get("seconds"), "tokens": meta.get("tokens")},
            "dev": {
                "notes": len(gold), "seed": args.dev_seed, "families": "dev",
                "characters": chars,
                "encode_and_two_decodes_chars_per_cpu_second": round(chars / tag_cpu) if tag_cpu else None,
                "default_bias": breakdown(0.0),
                "recall_bias": {"bias": recall_bias, **breakdown(recall_bias)},
                "load_after": _load(),
            },
        }, indent=1))


if __name__ == "__main__":
    main()
