"""What do the shorthand genres and surface styles add? Prints one JSON object.

Trains the CRF engine on the same number of synthetic notes from three
generator settings and scores each on the same held-out notes from the *dev*
template families with every genre and styles (other patients, wording none
of them was trained on):

- ``tidy``: the original four kinds, no styles (what the old starter used);
- ``genres``: every genre, no styles;
- ``realistic``: every genre, styles on 60% of notes (the starter's recipe).

Char recall and precision over non-whitespace characters, at bias 0 and -2.
Synthetic dev notes only: this says what each part adds on notes shaped like
these, not on real notes.

    PYTHONPATH=. .venv/bin/python bench/synthetic_ablation.py [--n-train 300] [--n-dev 200]
        [--iterations 100]
"""

from __future__ import annotations

import argparse
import json
import os
import time

from deid_core.engine.model import TrainConfig, train_model
from deid_core.evaluation.visible_chars import visible_char_prf
from deid_core.schemes import load_scheme
from deid_core.spans import Document
from deid_core.synthetic import KINDS, REALISTIC, generate_notes

SETTINGS = {
    "tidy": {"kinds": list(KINDS), "styles": 0.0},
    "genres": {"kinds": REALISTIC["kinds"], "styles": 0.0},
    "realistic": dict(REALISTIC),
}
BIASES = (0.0, -2.0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n-train", type=int, default=300)
    ap.add_argument("--n-dev", type=int, default=200)
    ap.add_argument("--iterations", type=int, default=100)
    args = ap.parse_args()
    dev = generate_notes(args.n_dev, seed=515_151, families="dev", **REALISTIC)
    out: dict[str, object] = {"n_train": args.n_train, "n_dev": args.n_dev, "iterations": args.iterations,
                              "load_start": [round(x, 2) for x in os.getloadavg()], "settings": {}}
    for name, options in SETTINGS.items():
        train = generate_notes(args.n_train, seed=12, families="train", **options)
        cpu = time.process_time()
        model = train_model(train, lang="en", scheme=load_scheme("i2b2_2014"),
                            config=TrainConfig(max_iterations=args.iterations, seed=12))
        train_cpu = time.process_time() - cpu
        preds: dict[float, list[Document]] = {b: [] for b in BIASES}
        for doc in dev:
            enc = model.encode(Document(doc.id, doc.text, (), doc.meta))
            for b in BIASES:
                preds[b].append(model.decode(enc, b).to_document(doc))
        out["settings"][name] = {  # type: ignore[index]
            "options": options,
            "train_cpu_seconds": round(train_cpu, 1),
            **{f"bias_{b:g}": {k: round(float(v), 4) for k, v in visible_char_prf(dev, preds[b]).items()
                               if k in ("recall", "precision")} for b in BIASES},
        }
    out["load_end"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
