"""Character-level recall and precision over non-whitespace characters.

``char_prf`` counts every character inside a span, whitespace included (a
span is what a reviewer accepts). Figures meant to be compared with other
de-identification tools (issue 12's table: PhysioNet deid, Philter) count
only visible characters: a two-word name is then the same number of PHI
characters whether a tool tags it as one span or as two. ``per_category``
splits recall by a gold document's ``meta.categories`` (a list parallel to
its spans), the miss categories of the English challenge set.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from deid_core.evaluation.metrics import pair_documents, prf
from deid_core.spans import Document, Span


def _mask(text: str, spans: Iterable[Span]) -> bytearray:
    mask = bytearray(len(text))
    for s in spans:
        mask[s.start : s.end] = b"\x01" * (s.end - s.start)
    return mask


def visible_char_prf(
    gold: Sequence[Document], pred: Sequence[Document]
) -> dict[str, float | int]:
    """Recall, precision and F1 over non-whitespace characters, whatever the labels."""
    overlap = gold_chars = pred_chars = 0
    for g, p in pair_documents(gold, pred):
        text = g.text
        gm = _mask(text, g.spans)
        pm = _mask(text, p.spans if p is not None else ())
        for i, c in enumerate(text):
            if gm[i] or pm[i]:
                if c.isspace():
                    continue
                gold_chars += gm[i]
                pred_chars += pm[i]
                overlap += gm[i] & pm[i]
    out: dict[str, float | int] = dict(prf(overlap, pred_chars - overlap, gold_chars - overlap))
    out.update(gold_chars=gold_chars, pred_chars=pred_chars, overlap_chars=overlap)
    return out


def recall_per_category(gold: Sequence[Document], pred: Sequence[Document]) -> dict[str, dict[str, float | int]]:
    """Per ``meta.categories`` entry: visible gold characters, those covered, and recall."""
    counts: dict[str, list[int]] = {}
    for g, p in pair_documents(gold, pred):
        categories = g.meta.get("categories") or []
        if len(categories) != len(g.spans):
            raise ValueError(f"document {g.id}: meta.categories must be parallel to its spans")
        pm = _mask(g.text, p.spans if p is not None else ())
        for span, category in zip(g.spans, categories):
            row = counts.setdefault(str(category), [0, 0])
            for i in range(span.start, span.end):
                if not g.text[i].isspace():
                    row[0] += 1
                    row[1] += pm[i]
    return {
        k: {"gold_chars": a, "covered_chars": b, "recall": round(b / a, 4) if a else 0.0}
        for k, (a, b) in sorted(counts.items())
    }
