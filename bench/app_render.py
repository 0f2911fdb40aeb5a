"""Server-side render time of the Review page for a ~3,000-character note (target <= 300 ms).

Runs ``pages/review.py`` through Streamlit's AppTest (the whole script: store
reads, live re-decode at the project bias from the cached encoding, tokens,
segments, component payload) against a temporary SQLite store. ``cold`` is the
first run of a session (model load + encoding); ``warm`` runs are what every
rerun after an edit costs. Prints one JSON object.

    .venv/bin/python bench/app_render.py [--model DIR] [--runs 15]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", help="model directory (default: train a small one)")
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="deid-bench-render-"))
    url = f"sqlite:///{tmp / 'bench.db'}"
    os.environ["DEID_DATABASE_URL"] = url

    from streamlit.testing.v1 import AppTest

    from deid_core.engine.model import DeidModel, TrainConfig, train_model
    from deid_core.engine.tokenize import tokenize
    from deid_core.schemes import load_scheme
    from deid_core.spans import Document
    from deid_core.store import repository as repo
    from deid_core.store.engine import open_store
    from deid_core.store.users import create_user
    from deid_core.synthetic import generate_notes
    from deid_core.ui.component import editor_payload
    from deid_core.ui.queue import predict_unreviewed
    from deid_core.ui.session import sign_in

    if args.model:
        model = DeidModel.load(args.model)
        path = Path(args.model)
    else:
        model = train_model(generate_notes(60, seed=1001), lang="en",
                            scheme=load_scheme("i2b2_2014"), config=TrainConfig(max_iterations=60))
        path = model.save(tmp / "models" / model.version)
    notes = generate_notes(80, seed=7)
    note = min(notes, key=lambda d: abs(len(d.text) - 3000))
    engine = open_store(url)
    create_user(engine, "rita", "bench password", role="reviewer")
    repo.create_project(engine, "bench")
    repo.import_documents(engine, "bench", [Document(note.id, note.text)])
    mv = repo.register_model_version(engine, "bench", version=model.version,
                                     artifact_path=str(path), activate=True)
    predict_unreviewed(engine, "bench", model, model_version=mv.version, model_version_id=mv.id,
                       bias=0.0)
    doc_id = repo.find_document(engine, "bench", note.id)

    at = AppTest.from_file(str(ROOT / "pages" / "review.py"), default_timeout=120)
    sign_in(at.session_state, "rita", "reviewer")
    at.session_state["current_doc"] = doc_id
    t = time.perf_counter()
    at.run()
    cold = (time.perf_counter() - t) * 1000
    if at.exception:
        print(json.dumps({"error": [str(e.value) for e in at.exception]}))
        return 1
    warm = []
    for _ in range(args.runs):
        t = time.perf_counter()
        at.run()
        warm.append((time.perf_counter() - t) * 1000)

    # the pure part: tokens, segments and the component payload for the same note
    layer = model.predict(note).spans
    scheme = load_scheme("i2b2_2014")
    pure = []
    for _ in range(args.runs):
        t = time.perf_counter()
        toks = tokenize(note.text).tokens
        editor_payload(doc_id=note.id, rev=0, text=note.text, spans=layer, labels=scheme.names,
                       colours=scheme.colours(), tokens=[(t.start, t.end) for t in toks])
        pure.append((time.perf_counter() - t) * 1000)
    print(json.dumps({
        "note_chars": len(note.text),
        "spans": len(layer),
        "cold_ms": round(cold, 1),
        "warm_ms_median": round(statistics.median(warm), 1),
        "warm_ms_max": round(max(warm), 1),
        "target_ms": 300,
        "tokens_payload_ms_median": round(statistics.median(pure), 2),
        "load_average_1min": round(os.getloadavg()[0], 2),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
