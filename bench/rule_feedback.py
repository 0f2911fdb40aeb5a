"""What the Model page's rule table costs, and whether its counts are right. One JSON object.

``--notes`` synthetic notes are imported into a fresh store (SQLite, or
PostgreSQL with ``--postgres``). Each gold span becomes a predicted span of
the "rule" named after its label, changed at random before the review: kept
(70%), relabelled (10%), cut short by one character (10%), or left as it is
and joined by a false positive the reviewer deletes (10%); the rule of
``--bad-label`` (AGE) relabels 60% of its spans, so it must be demoted. The reviewer's
save is the gold. The counts are known, so the bench checks the per-rule
table against them, then times what the Model page runs on every full
render when a review was saved since (``project_rule_feedback``: read every
reviewed note with its prediction, count, suggest), what it runs on every
other rerun (``feedback_key``), and what a retrain runs (``apply_rule_policy``).
CPU seconds are reported beside wall seconds (the machine is shared).

    .venv/bin/python bench/rule_feedback.py [--notes 1000] [--bad-label AGE] [--postgres]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from contextlib import ExitStack
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from deid_core.spans import Span  # noqa: E402


def build(url: str, n: int, seed: int, bad: str) -> tuple[object, dict[str, Counter[str]], float]:
    from _store_common import notes as make_notes

    from deid_core.store import repository as repo
    from deid_core.store.engine import open_store
    from deid_core.store.users import create_user

    engine = open_store(url)
    create_user(engine, "ada", "a long bench password", role="admin")
    create_user(engine, "rita", "a long bench password", role="reviewer")
    repo.create_project(engine, "bench", lang="en", scheme="i2b2_2014", actor="ada")
    docs, _source = make_notes(n, seed=seed)
    docs = [d for d in docs if d.spans]
    repo.import_documents(engine, "bench", [d.with_spans(()) for d in docs], actor="ada")
    ids = {r.external_id: r.doc_id for r in repo.review_queue(engine, "bench", order="id", limit=n + 10)}
    rng = np.random.default_rng(seed)
    expected: dict[str, Counter[str]] = {}
    started = time.perf_counter()
    for doc in docs:
        predicted = []
        for s in doc.spans:
            rule = f"rule:{s.label.lower()}"
            roll = rng.random()
            outcome = "kept"
            if s.label == bad and roll < 0.6:
                predicted.append(Span(s.start, s.end, "DATE", rule))
                outcome = "relabelled"
            elif roll < 0.1 and len(s) > 1:
                predicted.append(Span(s.start, s.end - 1, s.label, rule))
                outcome = "reshaped"
            elif roll < 0.2:
                other = "DATE" if s.label != "DATE" else "AGE"
                predicted.append(Span(s.start, s.end, other, rule))
                outcome = "relabelled"
            else:
                predicted.append(Span(s.start, s.end, s.label, rule))
            expected.setdefault(s.label.lower(), Counter())[outcome] += 1
            if 0.2 <= roll < 0.3:  # a false positive right after the span, if there is room
                gap = doc.text.find(" ", s.end + 1)
                end = doc.text.find(" ", gap + 1) if gap >= 0 else -1
                if gap >= 0 and end > gap + 1 and not any(
                        g.start < end and gap + 1 < g.end for g in doc.spans):
                    predicted.append(Span(gap + 1, end, s.label, rule))
                    expected[s.label.lower()]["deleted"] += 1
        repo.record_prediction(engine, ids[doc.id], predicted, model_version="m")
        layers = repo.get_document(engine, ids[doc.id])
        repo.save_review(engine, ids[doc.id], "rita", list(doc.spans), layers.version)
    return engine, expected, time.perf_counter() - started


def timed(fn):  # type: ignore[no-untyped-def]
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, round(time.perf_counter() - wall, 3), round(time.process_time() - cpu, 3)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--notes", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--bad-label", default="AGE", help="the label whose rule relabels 60%% of its spans")
    ap.add_argument("--postgres", action="store_true", help="DEID_BENCH_POSTGRES_URL / DEID_TEST_POSTGRES_URL")
    args = ap.parse_args()

    from deid_core.store.rule_feedback import apply_rule_policy, feedback_key, project_rule_feedback

    with ExitStack() as stack:
        if args.postgres:
            from _store_common import postgres_schema

            url = stack.enter_context(postgres_schema())
            backend = "postgresql"
        else:
            tmp = stack.enter_context(tempfile.TemporaryDirectory())
            url = f"sqlite:///{Path(tmp) / 'bench.db'}"
            backend = "sqlite"
        engine, expected, seed_s = build(url, args.notes, args.seed, args.bad_label)
        feedback, page_wall, page_cpu = timed(lambda: project_rule_feedback(engine, "bench", actor="ada"))
        counts_ok = all(
            Counter({k: v for k, v in ((o, getattr(feedback.stats[r], o)) for o in
                                       ("kept", "relabelled", "reshaped", "deleted")) if v}) == +want
            for r, want in expected.items()
        ) and set(feedback.stats) == set(expected)
        _, stats_wall, stats_cpu = timed(
            lambda: project_rule_feedback(engine, "bench", actor="ada", suggestions=False))
        _, key_wall, key_cpu = timed(lambda: feedback_key(engine, "bench"))
        demoted, policy_wall, policy_cpu = timed(lambda: apply_rule_policy(engine, "bench", actor="ada"))
        engine.dispose()  # type: ignore[attr-defined]
    print(json.dumps({
        "bench": "rule_feedback", "backend": backend, "reviewed_notes": feedback.n_notes,
        "rules": len(feedback.stats),
        "decisions": sum(s.decisions for s in feedback.stats.values()),
        "counts_match_simulation": counts_ok,
        "suggestions": len(feedback.suggestions),
        "demoted": demoted,
        "seed_seconds": round(seed_s, 1),
        "model_page_feedback": {"wall_s": page_wall, "cpu_s": page_cpu},
        "stats_only": {"wall_s": stats_wall, "cpu_s": stats_cpu},
        "page_rerun_key": {"wall_s": key_wall, "cpu_s": key_cpu},
        "apply_rule_policy": {"wall_s": policy_wall, "cpu_s": policy_cpu},
    }, indent=1))


if __name__ == "__main__":
    main()
