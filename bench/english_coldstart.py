"""English notes on day one (issue 12): what the rules+lexicon layer and a model find.

    .venv/bin/python bench/english_coldstart.py                       # the bundled starter + rules alone
    .venv/bin/python bench/english_coldstart.py --no-starter          # rules+lexicon layer alone
    .venv/bin/python bench/english_coldstart.py --model DIR --recall-bias -2
    .venv/bin/python bench/english_coldstart.py --rules old_en.yaml   # another rule file
    .venv/bin/python bench/english_coldstart.py --ablation 300        # train small models, see below

Prints one JSON object. Data sets: the hand-written challenge set
(tests/fixtures/english_challenge.jsonl), the second hand-written set
(english_challenge_2.jsonl, held out until its first score), the third
(english_challenge_3.jsonl), fourth (english_challenge_4.jsonl; session 6 of issue 13,
the same way), fifth to eighth (english_challenge_5.jsonl to english_challenge_8.jsonl; session 7) and any later
english_challenge_N.jsonl, ``--dev-families N`` notes from the
generator's dev template families (wording the starter never trained on, other
patients: seed 777_001, not the starter's own dev seed), presidio-synth dev
(read from ``--data``, never copied), and any ``--dev PATH`` JSONL. Without
``--model`` the bundled English starter is scored (built on first use), at
bias 0 and at the recall bias it records (``--bias recall``). For each tagger and
data set: character recall and precision over non-whitespace characters
(``deid_core.evaluation.visible_chars``), whatever the labels, at the default
bias and (for a model) at ``--recall-bias``; recall per miss category on the
challenge sets; and tagging speed (characters per CPU second and per wall
second, one process).

``--ablation N`` trains CRF models on N generated notes
(``deid_core.synthetic.generate_notes(N, seed=--seed)``) with parts switched
off (lexicon word features, the line-case feature, the issue-12 rules) and
scores each the same way, so
that the report can say what each part adds. ``--old-rules PATH`` names the
rule file before issue 12 for the "rules before" rows.
"""

from __future__ import annotations

import argparse
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

from deid_core.corpus import read_jsonl  # noqa: E402
from deid_core.engine.merge import merge_spans  # noqa: E402
from deid_core.engine.postprocess import apply_filters, load_filters  # noqa: E402
from deid_core.engine.rules import RuleSet, load_rules  # noqa: E402
from deid_core.evaluation.visible_chars import recall_per_category, visible_char_prf  # noqa: E402
from deid_core.spans import Document  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures"


def challenge_sets() -> dict[str, Path]:
    """Every hand-written challenge set on disk, in the order they were written.

    Set 1 is english_challenge.jsonl ("challenge"); set N is english_challenge_N.jsonl
    ("challenge-N"). Reading them by pattern means a new set needs no edit here.
    """
    found = {"challenge": FIXTURES / "english_challenge.jsonl"}
    numbered = sorted(FIXTURES.glob("english_challenge_*.jsonl"),
                      key=lambda p: int(p.stem.rsplit("_", 1)[1]))
    found.update({f"challenge-{p.stem.rsplit('_', 1)[1]}": p for p in numbered})
    return found


CATEGORY_SETS = tuple(challenge_sets())
DATA = Path("/work/shared/data")


def rules_tagger(rules: RuleSet):  # type: ignore[no-untyped-def]
    filters = load_filters("en")

    def tag(doc: Document) -> Document:
        spans = merge_spans(rules.find(doc.text, standalone_only=True))
        spans = apply_filters(doc.text, spans, filters)
        return Document(doc.id, doc.text, tuple(spans), {})

    return tag


def model_tagger(model: Any, bias: float):  # type: ignore[no-untyped-def]
    def tag(doc: Document) -> Document:
        return Document(doc.id, doc.text, tuple(model.predict(doc, bias).spans), {})

    return tag


def score(tag, docs: list[Document], *, categories: bool) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    cpu0, wall0 = time.process_time(), time.perf_counter()
    pred = [tag(d) for d in docs]
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    chars = sum(len(d.text) for d in docs)
    out: dict[str, Any] = {"char": _round(visible_char_prf(docs, pred))}
    if categories:
        out["recall_per_category"] = recall_per_category(docs, pred)
    out["speed"] = {
        "chars": chars,
        "cpu_seconds": round(cpu, 3),
        "wall_seconds": round(wall, 3),
        "chars_per_cpu_second": round(chars / cpu) if cpu else None,
        "chars_per_wall_second": round(chars / wall) if wall else None,
    }
    return out


def _round(d: dict[str, Any]) -> dict[str, Any]:
    return {k: round(v, 4) if isinstance(v, float) else v for k, v in d.items()}


def datasets(args: argparse.Namespace) -> dict[str, list[Document]]:
    sets = {name: read_jsonl(path) for name, path in challenge_sets().items()}
    presidio = args.data / "presidio-synth" / "dev.jsonl"
    if presidio.is_file() and not args.no_presidio:
        sets["presidio-synth-dev"] = read_jsonl(presidio)
    if args.dev_families:
        from deid_core.synthetic import REALISTIC, generate_notes

        sets["generator-dev-families"] = generate_notes(
            args.dev_families, seed=777_001, families="dev", **REALISTIC
        )
    for path in args.dev:
        sets[Path(path).stem] = read_jsonl(path)
    return sets


def evaluate_taggers(taggers: dict[str, Any], sets: dict[str, list[Document]]) -> dict[str, Any]:
    return {
        name: {ds: score(tag, docs, categories=(ds in CATEGORY_SETS)) for ds, docs in sets.items()}
        for name, tag in taggers.items()
    }


def ablation(args: argparse.Namespace, sets: dict[str, list[Document]]) -> dict[str, Any]:
    from deid_core.engine.model import TrainConfig, train_model, with_config
    from deid_core.schemes import load_scheme
    from deid_core.synthetic import generate_notes

    docs = generate_notes(args.ablation, seed=args.seed)
    scheme = load_scheme("i2b2_2014")
    base = TrainConfig(max_iterations=args.max_iterations)
    variants: dict[str, TrainConfig] = {
        "all parts": base,
        "no lexicon features": with_config(base, features={"lexicon": ""}),
        "no line-case feature": with_config(base, features={"line_case": False}),
    }
    if args.old_rules:
        variants["rules before issue 12"] = with_config(base, rules_path=str(args.old_rules))
        variants["before issue 12 (old rules, no lexicon, no line case)"] = with_config(
            base, rules_path=str(args.old_rules), features={"lexicon": "", "line_case": False}
        )
    if args.variants:
        wanted = [v.strip() for v in args.variants.split("|")]
        unknown = sorted(set(wanted) - set(variants))
        if unknown:
            raise SystemExit(f"unknown variants {unknown}; have {sorted(variants)}")
        variants = {k: v for k, v in variants.items() if k in wanted}
    out: dict[str, Any] = {}
    for name, config in variants.items():
        cpu0 = time.process_time()
        model = train_model(docs, lang="en", scheme=scheme, config=config)
        train_cpu = round(time.process_time() - cpu0, 1)
        taggers = {"bias 0": model_tagger(model, 0.0), f"bias {args.recall_bias}": model_tagger(model, args.recall_bias)}
        out[name] = {"train_cpu_seconds": train_cpu, **evaluate_taggers(taggers, sets)}
        print(f"ablation: {name} done", file=sys.stderr)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", type=Path, help="a model directory to score besides the rules alone"
                    " (default: the bundled English starter)")
    ap.add_argument("--no-starter", action="store_true", help="without --model: score the rules alone")
    ap.add_argument("--dev-families", type=int, default=200,
                    help="notes from the generator's dev template families (default 200; 0 skips)")
    ap.add_argument("--recall-bias", type=float, default=None,
                    help="the second bias for models (default: the model's recorded recall bias, else -2)")
    ap.add_argument("--dev", action="append", default=[], help="an extra JSONL dev set (repeatable)")
    ap.add_argument("--data", type=Path, default=DATA, help=f"benchmark corpora (default {DATA})")
    ap.add_argument("--no-presidio", action="store_true", help="skip presidio-synth dev")
    ap.add_argument("--rules", type=Path, help="score this rule file alone as well")
    ap.add_argument("--old-rules", type=Path, help="the rule file before issue 12, for the ablation")
    ap.add_argument("--ablation", type=int, default=0, help="train models on N generated notes per variant")
    ap.add_argument("--variants", help="ablation variants to train, separated by | (default: all)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--max-iterations", type=int, default=60)
    args = ap.parse_args()

    sets = datasets(args)
    from deid_core.engine.lexicons import load_lexicon

    load_lexicon("en")  # loaded once per process (about 0.2 s): not part of the tagging speed
    taggers: dict[str, Any] = {"rules+lexicon (built-in en)": rules_tagger(load_rules("en"))}
    if args.rules:
        taggers[f"rules alone ({args.rules.name})"] = rules_tagger(RuleSet.from_yaml(args.rules))
    model_path = args.model
    if model_path is None and not args.no_starter:
        from deid_core.synthetic.starter import ensure_starter

        cpu0 = time.process_time()
        model_path = ensure_starter("en", progress=lambda m, f: None)
        print(f"starter ready ({time.process_time() - cpu0:.1f} CPU s)", file=sys.stderr)
    recorded = None
    if model_path is not None:
        from deid_core.engine.model import DeidModel

        model = DeidModel.load(model_path)
        recorded = model.metadata.get("recall_bias")
        second = args.recall_bias if args.recall_bias is not None else (
            float(recorded) if recorded is not None else -2.0)
        name = "starter" if args.model is None else "model"
        taggers[f"{name}, bias 0"] = model_tagger(model, 0.0)
        taggers[f"{name}, bias {second:g}" + (" (recorded recall bias)" if args.recall_bias is None
                                               and recorded is not None else "")] = model_tagger(model, second)
    if args.recall_bias is None:
        args.recall_bias = float(recorded) if recorded is not None else -2.0
    result: dict[str, Any] = {
        "datasets": {k: {"documents": len(v), "chars": sum(len(d.text) for d in v)} for k, v in sets.items()},
        "model": str(model_path) if model_path is not None else None,
        "model_recall_bias": recorded,
        "load_average": os.getloadavg(),
        "taggers": evaluate_taggers(taggers, sets),
    }
    if args.ablation:
        result["ablation"] = {
            "train_notes": args.ablation, "seed": args.seed, "max_iterations": args.max_iterations,
            "variants": ablation(args, sets),
        }
    result["load_average_end"] = os.getloadavg()
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
