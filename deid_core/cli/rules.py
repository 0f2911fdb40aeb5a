"""``deid-workbench rules``: check, apply and score regex rules and filters without Python.

A site that adds its own identifiers writes a YAML rule file; these commands
tell it whether the file loads (``check``), what it finds in a corpus
(``apply``) and how precise each rule is against gold spans (``score``).
Output names rules, labels, counts and offsets, never note text.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Iterator
from typing import Any

from tqdm import tqdm

from deid_core.corpus import iter_jsonl, read_jsonl, write_jsonl
from deid_core.engine.merge import DEFAULT_PRIORITY, MergeConfig, merge_spans
from deid_core.engine.postprocess import apply_filters, load_filters
from deid_core.engine.rules import BUILTIN_RULE_LANGUAGES, load_rules, rule_report
from deid_core.spans import Document


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--lang", default="en", choices=BUILTIN_RULE_LANGUAGES, help="built-in set (default en)")
    p.add_argument("--rules", default=None, metavar="FILE", help="a YAML rule file instead of the built-in")


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "rules",
        help="check, apply and score regex rules and post-processing filters",
        description="Regex rules and post-processing filters are YAML data (docs/rules.md).",
    )
    sub = p.add_subparsers(dest="rules_command", metavar="ACTION")

    check = sub.add_parser("check", help="load a rule file and a filter file, report what they hold")
    _common(check)
    check.add_argument("--filters", default=None, metavar="FILE", help="a YAML filter file")
    check.add_argument(
        "--transforms", default=None, metavar="FILE",
        help="a TBED transformation file (a model's transforms.yaml, hand-edited or not)",
    )
    check.add_argument("--json", action="store_true", help="print one JSON object")
    check.set_defaults(func=run_check)

    apply = sub.add_parser(
        "apply", help="mark a JSONL corpus with rule spans (merged, then filtered)"
    )
    _common(apply)
    apply.add_argument("--filters", default=None, metavar="FILE", help="a YAML filter file")
    apply.add_argument("--no-filters", action="store_true", help="skip the post-processing filters")
    apply.add_argument("--input", required=True, help="JSONL corpus (its spans are replaced)")
    apply.add_argument("--output", required=True, help="JSONL output, written atomically")
    apply.add_argument(
        "--priority", default=",".join(DEFAULT_PRIORITY),
        help="merge order of span sources (default rule,charcrf,crf)",
    )
    apply.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    apply.set_defaults(func=run_apply)

    score = sub.add_parser("score", help="per-rule precision and recall against a gold corpus")
    _common(score)
    score.add_argument("--gold", required=True, help="gold JSONL corpus")
    score.add_argument(
        "--map", action="append", default=[], metavar="RULE_LABEL=GOLD_LABEL",
        help="map a rule label to the gold corpus's label (repeatable)",
    )
    score.add_argument("--json", action="store_true", help="print one JSON object")
    score.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    score.set_defaults(func=run_score)

    def show_help(_args: argparse.Namespace) -> int:
        p.print_help()
        return 2

    p.set_defaults(func=show_help)


def run_check(args: argparse.Namespace) -> int:
    rules = load_rules(args.lang, args.rules)
    filters = load_filters(args.lang, args.filters)
    summary = {
        "rules": {
            "source": args.rules or f"built-in {args.lang}",
            "count": len(rules),
            "labels": rules.labels,
            "anchored": sum(1 for r in rules.rules if r.anchor is not None),
            "validated": sum(1 for r in rules.rules if r.validator is not None),
        },
        "filters": {
            "source": args.filters or f"built-in {args.lang}",
            "enabled": [f.name for f in filters if f.enabled],
            "disabled": [f.name for f in filters if not f.enabled],
        },
    }
    if args.transforms:
        from deid_core.engine.transforms import TransformSet

        ts = TransformSet.load(args.transforms)
        summary["transforms"] = {
            "source": args.transforms,
            "count": len(ts),
            "actions": dict(sorted(Counter(t.action for t in ts.transforms).items())),
        }
    if args.json:
        print(json.dumps(summary, indent=1))
        return 0
    r = summary["rules"]
    print(f"rules: {r['count']} from {r['source']} ({r['anchored']} anchored, {r['validated']} validated)")
    print(f"labels: {', '.join(r['labels'])}")
    f = summary["filters"]
    print(f"filters from {f['source']}: {', '.join(f['enabled']) or '-'}")
    if f["disabled"]:
        print(f"disabled: {', '.join(f['disabled'])}")
    if "transforms" in summary:
        t = summary["transforms"]
        acts = ", ".join(f"{k} {v}" for k, v in t["actions"].items()) or "-"
        print(f"transforms: {t['count']} from {t['source']} ({acts})")
    return 0


def run_apply(args: argparse.Namespace) -> int:
    rules = load_rules(args.lang, args.rules)
    filters = [] if args.no_filters else load_filters(args.lang, args.filters)
    config = MergeConfig(tuple(s.strip() for s in args.priority.split(",") if s.strip()))
    counts: dict[str, int] = {}

    def marked() -> Iterator[Document]:
        for doc in tqdm(
            iter_jsonl(args.input), unit="doc", disable=args.no_progress, file=sys.stderr
        ):
            spans = merge_spans(rules.find(doc.text, standalone_only=True), config)
            if filters:
                spans = apply_filters(doc.text, spans, filters)
            for s in spans:
                counts[s.label] = counts.get(s.label, 0) + 1
            yield doc.with_spans(spans).with_meta(rules=rules.name)

    n = write_jsonl(args.output, marked())
    found = ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "nothing"
    print(f"wrote {n} documents to {args.output}; rule spans: {found}", file=sys.stderr)
    return 0


def run_score(args: argparse.Namespace) -> int:
    mapping = {}
    for item in args.map:
        if "=" not in item:
            print(f"error: --map needs RULE_LABEL=GOLD_LABEL, got {item!r}", file=sys.stderr)
            return 2
        key, value = item.split("=", 1)
        mapping[key.strip()] = value.strip()
    rules = load_rules(args.lang, args.rules)
    gold = read_jsonl(args.gold)
    bar = tqdm(total=len(gold), unit="doc", disable=args.no_progress, file=sys.stderr)

    def progress(_message: str, fraction: float) -> None:
        bar.n = round(fraction * len(gold))
        bar.refresh()

    try:
        report = rule_report(gold, rules, label_map=mapping, progress=progress)
    finally:
        bar.close()
    if args.json:
        print(json.dumps({"documents": len(gold), "rules": report}, indent=1))
        return 0

    def fmt(x: float | None) -> str:
        return "-" if x is None else f"{x:.3f}"

    print(f"{'rule':28} {'label':22} {'matches':>8} {'P':>6} {'R':>6} {'overlapP':>8}")
    for name, r in report.items():
        print(
            f"{name:28} {r['gold_label']:22} {r['matches']:8d} {fmt(r['precision']):>6}"
            f" {fmt(r['recall']):>6} {fmt(r['overlap_precision']):>8}"
        )
    return 0
