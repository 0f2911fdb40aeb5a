"""``evaluate``: the i2b2-style report scripts and the UI rely on, and its text form.

The JSON shape is a contract (``deid-workbench evaluate --json``); keys may be
added, never renamed. See docs/evaluation.md for every definition.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from scipy.stats import spearmanr

from deid_core.engine.tokenize import tokenize
from deid_core.errors import EmptyInput
from deid_core.evaluation.metrics import (
    LabelCounts,
    Progress,
    TokenSource,
    char_counts,
    char_label_recall,
    char_result,
    pair_documents,
    prf,
    prf_counts,
    relaxed_counts,
    strict_counts,
    token_bounds,
    token_counts,
)
from deid_core.evaluation.taxonomy import CATEGORIES, EXTENT_KINDS, error_report
from deid_core.schemes import LabelScheme
from deid_core.spans import Document

CRITERIA = ("strict", "relaxed", "token")


def _totals(per_doc: Sequence[LabelCounts]) -> LabelCounts:
    out: LabelCounts = {}
    for counts in per_doc:
        for label, (tp, fp, fn) in counts.items():
            row = out.setdefault(label, [0, 0, 0])
            row[0] += tp
            row[1] += fp
            row[2] += fn
    return out


def _micro(totals: LabelCounts, labels: set[str] | None = None) -> dict[str, float | int]:
    tp = fp = fn = 0
    for label, (a, b, c) in totals.items():
        if labels is None or label in labels:
            tp, fp, fn = tp + a, fp + b, fn + c
    return prf_counts(tp, fp, fn)


def _macro(totals: LabelCounts, labels: set[str] | None = None) -> dict[str, float | int]:
    """Unweighted mean of per-label P, R and F1 over labels seen in gold or predictions."""
    scores = [prf(*row) for label, row in totals.items() if labels is None or label in labels]
    if not scores:
        return {"precision": 1.0, "recall": 1.0, "f1": 1.0, "labels": 0}
    n = len(scores)
    return {
        "precision": sum(s["precision"] for s in scores) / n,
        "recall": sum(s["recall"] for s in scores) / n,
        "f1": sum(s["f1"] for s in scores) / n,
        "labels": n,
    }


def _macro_document(per_doc: Sequence[LabelCounts]) -> dict[str, float | int]:
    """Paper 004's record-level macro average: mean of each document's micro P, R, F1."""
    if not per_doc:
        return {"precision": 1.0, "recall": 1.0, "f1": 1.0, "documents": 0}
    scores = [_micro(counts) for counts in per_doc]
    n = len(scores)
    return {
        "precision": sum(s["precision"] for s in scores) / n,
        "recall": sum(s["recall"] for s in scores) / n,
        "f1": sum(s["f1"] for s in scores) / n,
        "documents": n,
    }


def _with_support(row: list[int]) -> dict[str, float | int]:
    out = prf_counts(*row)
    out["support"] = row[0] + row[2]
    return out


def criterion_report(
    per_doc: Sequence[LabelCounts], scheme: LabelScheme | None = None
) -> dict[str, Any]:
    """micro, macro, per label, per category and the HIPAA subset for one criterion."""
    totals = _totals(per_doc)
    out: dict[str, Any] = {
        "micro": _micro(totals),
        "macro": _macro(totals),
        "macro_document": _macro_document(per_doc),
        "per_label": {label: _with_support(totals[label]) for label in sorted(totals)},
        "per_category": {},
    }
    if scheme is not None:
        by_cat: dict[str, list[int]] = {}
        for label, row in totals.items():
            acc = by_cat.setdefault(scheme.category(label), [0, 0, 0])
            for i in range(3):
                acc[i] += row[i]
        out["per_category"] = {cat: _with_support(by_cat[cat]) for cat in sorted(by_cat)}
        hipaa = scheme.hipaa_labels()
        if hipaa:
            out["hipaa"] = {"micro": _micro(totals, hipaa), "macro": _macro(totals, hipaa)}
    return out


def _logprob(doc: Document | None) -> float | None:
    if doc is None:
        return None
    value = doc.meta.get("logprob")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def spearman_logprob_f1(
    logprobs: Sequence[float | None], f1s: Sequence[float]
) -> tuple[float | None, int]:
    """(rho, documents used). None when under 3 documents carry a log-probability or either side is constant.

    Uses the whole-document ``logprob`` (sum over sentences), as paper 002
    ranks whole records; length-normalised values would hide the length
    effect that the paper reports separately.
    """
    pairs = [(lp, f) for lp, f in zip(logprobs, f1s) if lp is not None]
    if len(pairs) < 3:
        return None, len(pairs)
    xs = [lp for lp, _ in pairs]
    ys = [f for _, f in pairs]
    if len(set(xs)) < 2 or len(set(ys)) < 2:
        return None, len(pairs)
    rho = float(spearmanr(xs, ys).statistic)
    return (rho if math.isfinite(rho) else None), len(pairs)


def evaluate(
    gold: Sequence[Document],
    pred: Sequence[Document],
    *,
    scheme: LabelScheme | None = None,
    lang: str = "en",
    relaxed_chars: int = 2,
    include_text: bool = False,
    max_examples: int = 5,
    tokens: Mapping[str, TokenSource] | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Score predictions against gold, i2b2 style (see docs/evaluation.md).

    Documents are paired by id; a gold document without a prediction has
    none. ``tokens`` (doc id -> tokenisation) skips re-tokenising for the
    token criterion; ``include_text`` adds span text to error examples and
    must stay off for anything that is logged.
    """
    if not gold:
        # Scores over nothing would read as perfect (P = R = F1 = 1.0).
        raise EmptyInput("no gold documents to evaluate against")
    pairs = pair_documents(gold, pred)
    tokens = tokens or {}
    strict_docs: list[LabelCounts] = []
    relaxed_docs: list[LabelCounts] = []
    token_docs: list[LabelCounts] = []
    overlap = gold_chars = pred_chars = 0
    label_chars: dict[str, list[int]] = {}
    logprobs: list[float | None] = []
    n = len(pairs)
    for i, (g, p) in enumerate(pairs):
        ps = p.spans if p is not None else ()
        strict_docs.append(strict_counts(g.spans, ps))
        relaxed_docs.append(relaxed_counts(g.spans, ps, relaxed_chars))
        src = tokens.get(g.id)
        bounds = token_bounds(src) if src is not None else token_bounds(tokenize(g.text, lang))
        token_docs.append(token_counts(bounds, g.spans, ps))
        o, gc, pc = char_counts(g.spans, ps)
        overlap, gold_chars, pred_chars = overlap + o, gold_chars + gc, pred_chars + pc
        for label, (total, covered) in char_label_recall(g.spans, ps).items():
            row = label_chars.setdefault(label, [0, 0])
            row[0] += total
            row[1] += covered
        logprobs.append(_logprob(p))
        if progress is not None and (i % 25 == 0 or i == n - 1):
            progress("evaluating", (i + 1) / n)

    char: dict[str, Any] = dict(char_result(overlap, gold_chars, pred_chars))
    char["per_label"] = {
        label: _leak(*label_chars[label]) for label in sorted(label_chars)
    }
    result: dict[str, Any] = {
        "strict": criterion_report(strict_docs, scheme),
        "relaxed": criterion_report(relaxed_docs, scheme),
        "token": criterion_report(token_docs, scheme),
        "char": char,
    }
    if scheme is not None and scheme.hipaa_labels():
        hipaa = scheme.hipaa_labels()
        total = sum(row[0] for label, row in label_chars.items() if label in hipaa)
        covered = sum(row[1] for label, row in label_chars.items() if label in hipaa)
        char["hipaa"] = _leak(total, covered)
    result["errors"] = error_report(pairs, include_text=include_text, max_examples=max_examples)
    f1s = [_micro(counts)["f1"] for counts in strict_docs]
    rho, used = spearman_logprob_f1(logprobs, f1s)  # type: ignore[arg-type]
    result["spearman_logprob_f1"] = rho
    result["spearman_documents"] = used
    result["documents"] = n
    result["settings"] = {
        "relaxed_chars": relaxed_chars,
        "lang": lang,
        "scheme": scheme.name if scheme is not None else None,
    }
    return result


def _leak(total: int, covered: int) -> dict[str, float | int]:
    return {
        "recall": covered / total if total else 1.0,
        "gold_chars": total,
        "missed_chars": total - covered,
    }


# ---------------------------------------------------------------- text report


def _row(name: str, m: Mapping[str, Any], counts: bool = True) -> str:
    line = f"{name:<22} {m['precision']:>7.4f} {m['recall']:>7.4f} {m['f1']:>7.4f}"
    if counts and "tp" in m:
        line += f" {m['tp']:>7} {m['fp']:>7} {m['fn']:>7}"
    return line


def format_report(result: Mapping[str, Any]) -> str:
    """A plain-text table of an ``evaluate`` result: no note text unless the result carries it."""
    header = f"{'':<22} {'P':>7} {'R':>7} {'F1':>7} {'TP':>7} {'FP':>7} {'FN':>7}"
    lines = [f"Evaluation of {result['documents']} documents", "", header]
    for crit in CRITERIA:
        block = result[crit]
        lines.append(_row(f"{crit} micro", block["micro"]))
        lines.append(_row(f"{crit} macro (labels)", block["macro"], counts=False))
        if "hipaa" in block:
            lines.append(_row(f"{crit} HIPAA micro", block["hipaa"]["micro"]))
    char = result["char"]
    lines.append(_row("char (any label)", char, counts=False))
    lines.append("")
    lines.append(
        f"PHI characters missed: {char['missed_chars']} of {char['gold_chars']}"
        f" ({100 * char['missed_share']:.2f}%)"
    )
    leaks = [(lab, v) for lab, v in char.get("per_label", {}).items() if v["missed_chars"]]
    if leaks:
        leaks.sort(key=lambda kv: -kv[1]["missed_chars"])
        lines.append(
            "  most missed: "
            + ", ".join(f"{lab} {v['missed_chars']} ({100 * (1 - v['recall']):.1f}%)" for lab, v in leaks[:5])
        )
    lines.append("")
    width = max([22] + [len(label) + 1 for label in result["strict"]["per_label"]])
    lines.append(
        f"{'label':<{width}} {'strict P':>8} {'strict R':>8} {'strict F1':>9}"
        f" {'relax F1':>8} {'token F1':>8} {'support':>8}"
    )
    for label, m in result["strict"]["per_label"].items():
        relaxed = result["relaxed"]["per_label"].get(label, {}).get("f1", 0.0)
        token = result["token"]["per_label"].get(label, {}).get("f1", 0.0)
        lines.append(
            f"{label:<{width}} {m['precision']:>8.4f} {m['recall']:>8.4f} {m['f1']:>9.4f}"
            f" {relaxed:>8.4f} {token:>8.4f} {m['support']:>8}"
        )
    if result["strict"].get("per_category"):
        lines.append("")
        lines.append(f"{'category (strict)':<22} {'P':>7} {'R':>7} {'F1':>7} {'TP':>7} {'FP':>7} {'FN':>7}")
        for cat, m in result["strict"]["per_category"].items():
            lines.append(_row(cat, m))
    errors = result["errors"]
    lines.append("")
    extent = errors["extent"]
    kinds = ", ".join(f"{k} {extent[k]['count']}" for k in EXTENT_KINDS)
    lines.append(
        "Errors (strict): "
        + ", ".join(
            f"{c} {errors[c]['count']}" + (f" ({kinds})" if c == "extent" else "")
            for c in CATEGORIES
        )
    )
    for c in CATEGORIES:
        for ex in errors[c]["examples"]:
            lines.append(f"  {c:<11} {_describe(ex)}")
    rho = result.get("spearman_logprob_f1")
    lines.append("")
    lines.append(
        "Spearman(log P, document F1): "
        + (f"{rho:.4f} over {result.get('spearman_documents')} documents" if rho is not None else "n/a")
    )
    return "\n".join(lines)


def _describe(ex: Mapping[str, Any]) -> str:
    def part(name: str) -> str:
        span = ex.get(name)
        if span is None:
            return f"{name} -"
        text = ex.get(f"{name}_text")
        shown = f" {text!r}" if text is not None else ""
        return f"{name} {span[0]}..{span[1]} {span[2]}{shown}"

    return f"{ex['doc_id']}: {part('gold')} | {part('pred')}"
