"""The stacked character CRF on MEDDOCAN dev: token CRF labels as character features, and merge policies.

    .venv/bin/python bench/charcrf_stacking.py --cache /tmp/charcrf_models \\
        --char '[{"stack": true, "oov_trigger": false}]' --policies fill,priority,subtoken

The token model (today's default, ``rules``) and the ``stack_folds`` out-of-fold
token models are trained once and cached under ``--cache`` (their training CPU
seconds are recorded there), so that several character CRF settings can be
compared without retraining the token CRF. For each character setting the
character CRF is trained on the train notes' out-of-fold token labels
(``model.out_of_fold_views``), attached to the token model, and scored on dev
under each merge policy with ``bench/ablation.py``'s ``score`` (strict F1,
character recall, the bias sweep, tagging speed). Prints one JSON line per
row on stderr and the whole result as JSON on stdout. CPU seconds are the
process's own (``time.process_time``).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from ablation import SETTINGS, load_corpus, score  # noqa: E402

from deid_core.engine.charcrf import CharCRFConfig, train_char_crf  # noqa: E402
from deid_core.engine.model import (  # noqa: E402
    DeidModel,
    TrainConfig,
    out_of_fold_views,
    stack_folds,
    train_model,
    with_config,
)
from deid_core.engine.tokenize import tokenize  # noqa: E402


def cached_model(path: Path, train: list, idx: list[int], lang: str, scheme: Any, config: TrainConfig) -> DeidModel:
    """Load ``path`` or train on ``train[idx]`` and save it there, with its training CPU seconds."""
    if (path / "manifest.json").exists():
        return DeidModel.load(path)
    cpu, wall = time.process_time(), time.perf_counter()
    model = train_model([train[i] for i in idx], lang=lang, scheme=scheme, config=config)
    model.metadata["bench_cpu_s"] = round(time.process_time() - cpu, 1)
    model.metadata["bench_wall_s"] = round(time.perf_counter() - wall, 1)
    model.save(path)
    return model


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", choices=sorted(SETTINGS), default="meddocan")
    ap.add_argument("--cache", default="/tmp/charcrf_models", help="where the token models are kept")
    ap.add_argument("--char", default='[{"stack": true}]', help="JSON list of CharCRFConfig changes")
    ap.add_argument("--policies", default="fill,priority,subtoken", help="merge policies, each NAME[:MIN_SCORE]")
    ap.add_argument("--dev-limit", type=int, default=0)
    ap.add_argument("--no-baseline", action="store_true", help="skip scoring the token model alone")
    args = ap.parse_args()
    lang, scheme, train, dev = load_corpus(args.corpus, dev_limit=args.dev_limit)
    cache = Path(args.cache)
    base = TrainConfig()
    model = cached_model(cache / "rules", train, list(range(len(train))), lang, scheme, base)
    rows: dict[str, Any] = {}

    def emit(name: str, row: dict[str, Any]) -> None:
        row["load_average"] = [round(x, 2) for x in os.getloadavg()]
        rows[name] = row
        print(json.dumps({"row": name, **row}), file=sys.stderr, flush=True)

    if not args.no_baseline:
        emit("rules", score(model, dev, lang))
    for changes in json.loads(args.char):
        cfg = CharCRFConfig(**changes)
        config = with_config(base, charcrf=cfg)
        fold_of = stack_folds(len(train), config)
        folds = [
            cached_model(cache / f"fold{f}-of{cfg.stack_folds}", train,
                         [i for i in range(len(train)) if fold_of[i] != f], lang, scheme, base)
            for f in range(cfg.stack_folds)
        ]
        cpu = time.process_time()
        views = out_of_fold_views(train, lang=lang, scheme=scheme, config=config, fold_models=folds)
        view_cpu = time.process_time() - cpu
        notes = []
        for d in train:
            raw = model.rules.find(d.text) if model.rules is not None else []
            notes.append((d.text, tokenize(d.text, lang).tokens, raw, d.spans))
        cpu, wall = time.process_time(), time.perf_counter()
        digest = hashlib.sha256(json.dumps(changes, sort_keys=True).encode()).hexdigest()[:10]
        out = cache / f"charcrf-{digest}.crfsuite"
        tagger, stats = train_char_crf(notes, cfg, out, views=views if cfg.stack else None)
        char_cpu, char_wall = time.process_time() - cpu, time.perf_counter() - wall
        token_cpu = model.metadata.get("bench_cpu_s")
        fold_cpu = [m.metadata.get("bench_cpu_s") for m in folds]
        for spec in args.policies.split(","):  # "fill" or "fill:0.9" (with a min_score)
            policy, _, floor = spec.partition(":")
            model.char = tagger.with_config(
                dataclasses.replace(cfg, policy=policy, min_score=float(floor) if floor else cfg.min_score)
            )
            row = score(model, dev, lang)
            row.update(
                char_config=model.char.config.to_dict(), char_training=stats,
                char_train_cpu_s=round(char_cpu, 1), char_train_wall_s=round(char_wall, 1),
                oof_views_cpu_s=round(view_cpu, 1), token_train_cpu_s=token_cpu, fold_train_cpu_s=fold_cpu,
            )
            emit(f"{json.dumps(changes, sort_keys=True)} {spec}", row)
        model.char = None
    print(json.dumps({"corpus": args.corpus, "dev_documents": len(dev), "rows": rows}))


if __name__ == "__main__":
    main()
