"""The error taxonomy of paper 004 section 8.2, under the strict criterion.

Every prediction that is not a strict match falls into exactly one class, and
every gold span that no prediction touches is a ``missing`` error:

- ``type``: same start and end as a gold span, different label;
- ``extent``: overlaps a gold span of the same label with other boundaries:
  ``short`` (inside the gold span), ``long`` (contains it) or ``short&long``
  (crossing it); the gold span used is the same-label one it overlaps most;
- ``type&extent``: overlaps gold spans, but none of its label and none with
  its extent (paper 004 folds these into extent; we keep them apart so that
  ``extent`` means "right label, wrong boundaries" as the issue asks);
- ``duplicate``: a second copy of a prediction that already matched;
- ``spurious``: overlaps no gold span;
- ``missing``: a gold span overlapped by no prediction (any label).

Examples carry document ids, offsets and labels; text only on request,
because reports end up in logs and tickets.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from collections.abc import Sequence
from typing import Any

from deid_core.spans import Document, Span

CATEGORIES = ("type", "extent", "type&extent", "duplicate", "spurious", "missing")
EXTENT_KINDS = ("short", "long", "short&long")


class _Overlaps:
    """Spans sorted by start with a running maximum end, for overlap queries."""

    def __init__(self, spans: Sequence[Span]) -> None:
        self.spans = sorted(spans, key=lambda s: (s.start, s.end, s.label))
        self.starts = [s.start for s in self.spans]
        self.max_end: list[int] = []
        best = -1
        for s in self.spans:
            best = max(best, s.end)
            self.max_end.append(best)

    def find(self, start: int, end: int) -> list[Span]:
        k = bisect_left(self.starts, end) - 1
        out = []
        while k >= 0 and self.max_end[k] > start:
            s = self.spans[k]
            if s.end > start:
                out.append(s)
            k -= 1
        out.reverse()
        return out


def classify_document(gold: Sequence[Span], pred: Sequence[Span]) -> list[tuple[str, Span | None, Span | None]]:
    """(category, gold span or None, predicted span or None) for every error in one document.

    For ``extent`` the category is ``extent:short`` etc.
    """
    out: list[tuple[str, Span | None, Span | None]] = []
    unmatched = Counter(s.key for s in gold)
    gold_index = _Overlaps(gold)
    pred_index = _Overlaps(pred)
    for p in sorted(pred, key=lambda s: (s.start, s.end, s.label)):
        if unmatched.get(p.key, 0) > 0:
            unmatched[p.key] -= 1
            continue
        hits = gold_index.find(p.start, p.end)
        if not hits:
            out.append(("spurious", None, p))
            continue
        same_extent = [g for g in hits if g.start == p.start and g.end == p.end]
        if same_extent:
            wrong = [g for g in same_extent if g.label != p.label]
            if wrong:
                out.append(("type", wrong[0], p))
            else:
                out.append(("duplicate", same_extent[0], p))
            continue
        same_label = [g for g in hits if g.label == p.label]
        if not same_label:
            best = max(hits, key=lambda g: _overlap(g, p))
            out.append(("type&extent", best, p))
            continue
        g = max(same_label, key=lambda g: _overlap(g, p))
        if p.start >= g.start and p.end <= g.end:
            kind = "short"
        elif p.start <= g.start and p.end >= g.end:
            kind = "long"
        else:
            kind = "short&long"
        out.append((f"extent:{kind}", g, p))
    for g in gold:
        if not pred_index.find(g.start, g.end):
            out.append(("missing", g, None))
    return out


def _overlap(a: Span, b: Span) -> int:
    return min(a.end, b.end) - max(a.start, b.start)


def _example(doc: Document, g: Span | None, p: Span | None, include_text: bool) -> dict[str, Any]:
    ex: dict[str, Any] = {
        "doc_id": doc.id,
        "gold": [g.start, g.end, g.label] if g is not None else None,
        "pred": [p.start, p.end, p.label] if p is not None else None,
    }
    if include_text:
        ex["gold_text"] = doc.text[g.start : g.end] if g is not None else None
        ex["pred_text"] = doc.text[p.start : p.end] if p is not None else None
    return ex


def _bucket() -> dict[str, Any]:
    return {"count": 0, "by_label": {}, "examples": []}


def error_report(
    pairs: Sequence[tuple[Document, Document | None]],
    *,
    include_text: bool = False,
    max_examples: int = 5,
) -> dict[str, Any]:
    """Counts, per-label counts and the first ``max_examples`` examples of each class.

    ``by_label`` counts the predicted label (the gold label for ``missing``);
    ``type`` also has ``confusion``: "GOLD -> PRED" -> count.
    """
    report: dict[str, Any] = {c: _bucket() for c in CATEGORIES}
    for kind in EXTENT_KINDS:
        report["extent"][kind] = _bucket()
    report["type"]["confusion"] = {}
    for g_doc, p_doc in pairs:
        pred_spans = p_doc.spans if p_doc is not None else ()
        for category, g, p in classify_document(g_doc.spans, pred_spans):
            kind = None
            if category.startswith("extent:"):
                category, kind = category.split(":", 1)
            label = p.label if p is not None else g.label  # type: ignore[union-attr]
            targets = [report[category]] + ([report["extent"][kind]] if kind else [])
            for bucket in targets:
                bucket["count"] += 1
                bucket["by_label"][label] = bucket["by_label"].get(label, 0) + 1
                if len(bucket["examples"]) < max_examples:
                    bucket["examples"].append(_example(g_doc, g, p, include_text))
            if category == "type":
                pair = f"{g.label} -> {p.label}"  # type: ignore[union-attr]
                report["type"]["confusion"][pair] = report["type"]["confusion"].get(pair, 0) + 1
    return report
