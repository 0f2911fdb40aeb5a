"""``deidentify --mode surrogate`` on MEDDOCAN dev with a MEDDOCAN-trained model: what stays verbatim.

Trains a model on MEDDOCAN train (or loads ``--model``), then runs the per-note
step both ``deidentify`` engines share (``Deidentifier.process``: model with
propagation on or off, surrogates, the note's leak check, reject or write) on
every dev note, and reports:

- ``gold_4plus_verbatim``: gold PHI strings of 4+ characters (distinct per
  note) found verbatim in the written output of their own note (rejected notes
  are not written), split into ``..._in_text`` (somewhere in unchanged text: a
  miss) and ``..._kept`` (only inside spans the operators keep as written by
  design: ages up to 89, dates whose shift keeps the year);
- ``rejected``: notes sent to rejects by the leak check;
- ``strict``: strict precision, recall and F1 of the model's spans against gold;
  ``strict_masked``: the same for every span that was replaced (in-note
  propagation and, with ``--scope corpus``, the spans masked from other notes).

``--scope corpus`` runs the first pass (``Deidentifier.gather``) over all dev
notes, as ``deidentify --scope corpus`` does; each MEDDOCAN note is its own
patient, so ``patient`` scope equals ``document`` there. ``--by-label`` adds the
labels of the gold strings left verbatim (labels and counts only).

    .venv/bin/python bench/meddocan_deidentify.py [--data ../shared/data/meddocan] [--model DIR]
        [--save DIR] [--bias 0 -2] [--scope document corpus] [--seed-min-score 0.9]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time
from pathlib import Path

from deid_core.corpus import read_jsonl
from deid_core.engine.model import DeidModel, TrainConfig, train_model
from deid_core.evaluation.metrics import prf, strict_counts
from deid_core.protect.deidentify import Deidentifier, operator_config
from deid_core.schemes import load_scheme
from deid_core.spans import Span, sort_spans

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "meddocan"
SECRET = b"bench-meddocan-secret-0123456789"


def run(
    model: DeidModel, dev: list, bias: float, propagate: bool, scope: str = "document",
    seed_min_score: float | None = None,
) -> dict[str, object]:
    model.propagate = propagate
    ops = operator_config(lang=model.lang, scheme=model.scheme.name, mode="surrogate")
    proc = Deidentifier(model, ops, SECRET, bias, scope=scope, seed_min_score=seed_min_score)  # type: ignore[arg-type]
    t0, c0 = time.perf_counter(), time.process_time()
    known = None
    if proc.needs_known:
        known = proc.new_known()
        for doc in dev:
            proc.gather(known, doc.with_spans(()), patient_key=None)
    rejected, verbatim, in_text, gold_4, written_gold_4 = 0, 0, 0, 0, 0
    by_label: dict[str, int] = {}
    tp = fp = fn = 0
    mtp = mfp = mfn = 0
    propagated = masked = 0
    for doc in dev:
        outcome = proc.process(doc.with_spans(()), patient_key=None, known=known)
        pred = model.predict(doc.with_spans(()), bias=bias).spans
        for c in strict_counts(doc.spans, pred).values():
            tp, fp, fn = tp + c[0], fp + c[1], fn + c[2]
        replaced = [*proc.predict(doc.with_spans(())),
                    *(Span(a, b, label, "propagated", 1.0) for a, b, label in outcome.masked)]
        for c in strict_counts(doc.spans, sort_spans(replaced)).values():
            mtp, mfp, mfn = mtp + c[0], mfp + c[1], mfn + c[2]
        propagated += outcome.propagated
        masked += len(outcome.masked)
        strings = {doc.text[s.start : s.end]: s.label for s in doc.spans if s.end - s.start >= 4}
        gold_4 += len(strings)
        if outcome.record is None:
            rejected += 1
            continue
        written_gold_4 += len(strings)
        out = outcome.record["text"]
        regions = [(r["start"], r["end"]) for r in outcome.record["spans"]]
        for v, label in strings.items():
            found = [m.start() for m in re.finditer(re.escape(v), out)]
            if not found:
                continue
            verbatim += 1
            if not all(any(a <= i and i + len(v) <= b for a, b in regions) for i in found):
                in_text += 1
                by_label[label] = by_label.get(label, 0) + 1
    return {
        "propagate": propagate,
        "scope": scope,
        "seed_min_score": proc.seed_min_score,
        "documents": len(dev),
        "rejected": rejected,
        "rejected_share": round(rejected / len(dev), 4),
        "gold_4plus_strings": gold_4,
        "gold_4plus_in_written_notes": written_gold_4,
        "gold_4plus_verbatim": verbatim,
        "gold_4plus_verbatim_share": round(verbatim / gold_4, 4) if gold_4 else None,
        "gold_4plus_verbatim_in_text": in_text,
        "gold_4plus_verbatim_in_text_share": round(in_text / gold_4, 4) if gold_4 else None,
        "gold_4plus_verbatim_kept": verbatim - in_text,
        "in_text_by_label": dict(sorted(by_label.items(), key=lambda kv: -kv[1])),
        "propagated_spans": propagated,
        "masked_from_other_notes": masked,
        "known_strings": len(known) if known is not None else 0,
        "strict": {k: round(v, 4) for k, v in prf(tp, fp, fn).items()},
        "strict_masked": {k: round(v, 4) for k, v in prf(mtp, mfp, mfn).items()},
        "wall_s": round(time.perf_counter() - t0, 1),
        "cpu_s": round(time.process_time() - c0, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", help="a model directory trained on MEDDOCAN train (else train one)")
    ap.add_argument("--save", help="save the trained model here")
    ap.add_argument("--bias", type=float, nargs="+", default=[0.0], help="one or more O-label biases")
    ap.add_argument("--data", default=str(DATA), help="folder with MEDDOCAN train.jsonl and dev.jsonl")
    ap.add_argument("--scope", nargs="+", default=["document"], choices=("document", "patient", "corpus"))
    ap.add_argument("--seed-min-score", type=float, default=None)
    ap.add_argument("--no-propagate-runs", action="store_true", help="skip the runs with propagation off")
    args = ap.parse_args()
    data = Path(args.data)
    out: dict[str, object] = {"load_average": os.getloadavg()}
    if args.model:
        model = DeidModel.load(args.model)
    else:
        t0, c0 = time.perf_counter(), time.process_time()
        model = train_model(read_jsonl(data / "train.jsonl"), lang="es", scheme=load_scheme("meddocan"),
                            config=TrainConfig())
        out["train"] = {"wall_s": round(time.perf_counter() - t0, 1), "cpu_s": round(time.process_time() - c0, 1)}
        if args.save:
            model.save(args.save)
    dev = read_jsonl(data / "dev.jsonl")
    props = (True,) if args.no_propagate_runs else (False, True)
    out["runs"] = [
        run(model, dev, b, p, sc, args.seed_min_score) | {"bias": b}
        for b in args.bias for sc in args.scope for p in props
    ]
    out["load_average_end"] = os.getloadavg()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
