"""Precision and recall of each regex rule against gold spans, and rules-only speed.

Prints one JSON object. Corpora: MEDDOCAN train+dev with the Spanish rules,
presidio-synth dev with the English rules (labels mapped, see PRESIDIO_LABELS),
and generated notes (deid_core.synthetic: English in i2b2 labels, Spanish in MEDDOCAN labels).

A rule match is a strict hit when a gold span has the same offsets and the
rule's (mapped) label; ``overlap_precision`` counts a match as right when it
overlaps any gold span at all, whatever its label (the leak view: did the rule
at least cover PHI?). Recall is over the gold spans of the rule's label.

    python bench/rules_precision.py [--data ../shared/data] [--repeat 3] [--synthetic 300 --seed 11]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from deid_core.corpus import read_jsonl  # noqa: E402
from deid_core.engine.merge import merge_spans  # noqa: E402
from deid_core.engine.postprocess import apply_filters, load_filters  # noqa: E402
from deid_core.engine.rules import RuleSet, load_rules  # noqa: E402
from deid_core.spans import Document  # noqa: E402
from deid_core.synthetic import generate_notes  # noqa: E402

# i2b2 2014 rule labels -> presidio-synth gold labels. MEDICALRECORD has no
# presidio counterpart: its matches are reported but not scored.
PRESIDIO_LABELS = {
    "PHONE": "PHONE_NUMBER",
    "FAX": "PHONE_NUMBER",
    "EMAIL": "EMAIL_ADDRESS",
    "URL": "DOMAIN_NAME",
    "IPADDR": "IP_ADDRESS",
    "SSN": "US_SSN",
    "ZIP": "ZIP_CODE",
    "DATE": "DATE_TIME",
    "AGE": "AGE",
}


def _prf(tp: int, n_pred: int, n_gold: int) -> dict[str, float | None]:
    p = tp / n_pred if n_pred else None
    r = tp / n_gold if n_gold else None
    f = 2 * p * r / (p + r) if p and r else (0.0 if p is not None and r is not None else None)
    return {"precision": _round(p), "recall": _round(r), "f1": _round(f)}


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def score_rules(
    docs: Sequence[Document], rules: RuleSet, label_map: Callable[[str], str | None]
) -> dict:
    gold_by_label: dict[str, int] = defaultdict(int)
    per_rule: dict[str, dict[str, int]] = {
        r.name: {"matches": 0, "tp": 0, "overlap_tp": 0} for r in rules.rules
    }
    merged = {"pred": defaultdict(int), "tp": defaultdict(int)}
    filtered = {"pred": defaultdict(int), "tp": defaultdict(int)}
    filters = load_filters(rules.lang or "en")
    for doc in docs:
        gold_keys = {(s.start, s.end, s.label) for s in doc.spans}
        for s in doc.spans:
            gold_by_label[s.label] += 1
        gold_sorted = sorted(doc.spans, key=lambda s: s.start)
        found = rules.find(doc.text)
        # per rule, before dedup by the set (find already keeps one span per key)
        for rule in rules.rules:
            for span in rule.find(doc.text):
                stats = per_rule[rule.name]
                stats["matches"] += 1
                mapped = label_map(span.label)
                if mapped is not None and (span.start, span.end, mapped) in gold_keys:
                    stats["tp"] += 1
                if any(g.start < span.end and span.start < g.end for g in gold_sorted):
                    stats["overlap_tp"] += 1
        for stage, spans in (
            (merged, merge_spans(found)),
            (filtered, apply_filters(doc.text, merge_spans(found), filters)),
        ):
            for span in spans:
                mapped = label_map(span.label)
                if mapped is None:
                    continue
                stage["pred"][mapped] += 1
                if (span.start, span.end, mapped) in gold_keys:
                    stage["tp"][mapped] += 1

    rules_out = {}
    for rule in rules.rules:
        stats = per_rule[rule.name]
        mapped = label_map(rule.label)
        n_gold = gold_by_label.get(mapped, 0) if mapped else 0
        entry = {"label": rule.label, "gold_label": mapped, "matches": stats["matches"]}
        entry.update(_prf(stats["tp"], stats["matches"], n_gold) if mapped else {})
        entry["overlap_precision"] = _round(
            stats["overlap_tp"] / stats["matches"] if stats["matches"] else None
        )
        rules_out[rule.name] = entry

    def per_label(stage: dict) -> dict:
        labels = sorted(set(stage["pred"]))
        out = {
            lab: {
                "pred": stage["pred"][lab],
                "gold": gold_by_label.get(lab, 0),
                **_prf(stage["tp"][lab], stage["pred"][lab], gold_by_label.get(lab, 0)),
            }
            for lab in labels
        }
        tp = sum(stage["tp"][lab] for lab in labels)
        n_pred = sum(stage["pred"][lab] for lab in labels)
        n_gold = sum(gold_by_label.get(lab, 0) for lab in labels)
        out["_micro_over_rule_labels"] = {"pred": n_pred, "gold": n_gold, **_prf(tp, n_pred, n_gold)}
        return out

    return {
        "documents": len(docs),
        "gold_spans": sum(gold_by_label.values()),
        "rules": rules_out,
        "merged_by_label": per_label(merged),
        "merged_filtered_by_label": per_label(filtered),
    }


def filters_on_gold(docs: Sequence[Document], lang: str) -> dict:
    """How many gold spans each filter would drop or trim: every one is a filter mistake.

    Filters are meant for detector output; run over gold they should change
    nothing, so this counts (without any text) the gold they would destroy.
    """
    filters = load_filters(lang)
    changed: dict[str, dict[str, int]] = defaultdict(lambda: {"dropped": 0, "trimmed": 0})
    labels: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    total = 0
    for doc in docs:
        trace: list = []
        apply_filters(doc.text, doc.spans, filters, trace=trace)
        total += len(doc.spans)
        for name, before, after in trace:
            changed[name]["dropped" if after is None else "trimmed"] += 1
            labels[name][before.label] += 1
    return {
        "gold_spans": total,
        "changed": sum(v["dropped"] + v["trimmed"] for v in changed.values()),
        "by_filter": {k: {**v, "labels": dict(labels[k])} for k, v in sorted(changed.items())},
    }


def time_rules(docs: Sequence[Document], rules: RuleSet, repeat: int) -> dict:
    """Median over ``repeat`` passes; rules alone, then rules + merge + filters."""
    filters = load_filters(rules.lang or "en")
    texts = [d.text for d in docs]
    chars = sum(len(t) for t in texts)
    find_runs, find_cpu, full_runs = [], [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        for text in texts:
            rules.find(text)
        find_runs.append(time.perf_counter() - t0)
        find_cpu.append(time.process_time() - c0)
        t0 = time.perf_counter()
        for text in texts:
            apply_filters(text, merge_spans(rules.find(text)), filters)
        full_runs.append(time.perf_counter() - t0)
    find_s, full_s = statistics.median(find_runs), statistics.median(full_runs)
    cpu_s = statistics.median(find_cpu)
    n = len(texts)
    return {
        "documents": n,
        "mean_chars_per_document": round(chars / n, 1),
        # Wall clock is what a user waits; CPU time is what one core spends, and is
        # the steadier figure on a shared machine.
        "rules_ms_per_document": round(1000 * find_s / n, 3),
        "rules_cpu_ms_per_document": round(1000 * cpu_s / n, 3),
        "rules_cpu_ms_per_3000_chars": round(1000 * cpu_s / chars * 3000, 3),
        "rules_merge_filters_ms_per_document": round(1000 * full_s / n, 3),
        "load_average_1min": round(os.getloadavg()[0], 2),
        "repeat": repeat,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--synthetic", type=int, default=300, help="synthetic notes per language")
    parser.add_argument("--seed", type=int, default=11, help="seed of the synthetic notes")
    args = parser.parse_args(argv)

    es_rules, en_rules = load_rules("es"), load_rules("en")
    meddocan = read_jsonl(args.data / "meddocan" / "train.jsonl") + read_jsonl(
        args.data / "meddocan" / "dev.jsonl"
    )
    presidio = read_jsonl(args.data / "presidio-synth" / "dev.jsonl")
    synthetic = generate_notes(args.synthetic, seed=args.seed)
    synthetic_es = generate_notes(args.synthetic, seed=args.seed, lang="es")
    result = {
        "meddocan_train_dev": score_rules(meddocan, es_rules, lambda label: label),
        "presidio_synth_dev": score_rules(presidio, en_rules, PRESIDIO_LABELS.get),
        "synthetic_en": score_rules(synthetic, en_rules, lambda label: label),
        "synthetic_es": score_rules(synthetic_es, es_rules, lambda label: label),
        "presidio_label_map": PRESIDIO_LABELS,
        "filters_on_gold": {
            "meddocan_train_dev": filters_on_gold(meddocan, "es"),
            "presidio_synth_dev": filters_on_gold(presidio, "en"),
            "synthetic_en": filters_on_gold(synthetic, "en"),
            "synthetic_es": filters_on_gold(synthetic_es, "es"),
        },
        "speed_meddocan_es": time_rules(meddocan, es_rules, args.repeat),
        "speed_meddocan_en_rules": time_rules(meddocan, en_rules, args.repeat),
        "speed_synthetic_en": time_rules(synthetic, en_rules, args.repeat),
    }
    print(json.dumps(result, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
