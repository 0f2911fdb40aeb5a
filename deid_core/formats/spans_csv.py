"""A CSV of spans with provenance: who or what found each span, with which model.

One row per span of the exported (de-identified) documents: ``doc_id``,
``start``, ``end``, ``label``, ``text`` (the replacement as it appears in the
exported text, never the original), ``operator``, ``source`` (``rule:<name>``,
``crf:<version>``, ``human:<user>``, ``gold``), ``author`` (the user of a
human source), ``model_version`` (of a CRF source, or the document's), and
``score``. Cells that a spreadsheet would run as a formula are prefixed with
an apostrophe (CSV injection).
"""

from __future__ import annotations

import csv
import os
from collections.abc import Iterable, Sequence
from typing import Any

from deid_core.corpus import atomic_write_text
from deid_core.spans import Document, Span, sort_spans

COLUMNS = (
    "doc_id", "start", "end", "label", "text", "operator", "source", "author", "model_version",
    "score",
)
_FORMULA = ("=", "+", "-", "@", "\t", "\r")


def _cell(value: Any) -> Any:
    if isinstance(value, str) and value.startswith(_FORMULA):
        return "'" + value
    return value


def provenance(span: Span, doc_model_version: str | None = None) -> tuple[str, str]:
    """``(author, model_version)`` read from a span's source."""
    kind, _, name = span.source.partition(":")
    author = name if kind == "human" else ""
    model = name if kind in ("crf", "charcrf") else (doc_model_version or "")
    return author, model


def span_rows(doc: Document, operators: Sequence[str] | None = None) -> Iterable[dict[str, Any]]:
    model = doc.meta.get("model_version")
    spans = sort_spans(doc.spans)
    for i, s in enumerate(spans):
        author, model_version = provenance(s, str(model) if model else None)
        yield {
            "doc_id": doc.id,
            "start": s.start,
            "end": s.end,
            "label": s.label,
            "text": doc.text[s.start : s.end],
            "operator": operators[i] if operators is not None else "",
            "source": s.source,
            "author": author,
            "model_version": model_version,
            "score": round(s.score, 6),
        }


def write_spans_csv(
    path: str | os.PathLike[str],
    docs: Iterable[Document],
    operators: dict[str, Sequence[str]] | None = None,
) -> int:
    """Write every span of ``docs`` atomically; ``operators[doc_id]`` follows span order."""
    count = 0

    def write(fh: Any) -> None:
        nonlocal count
        writer = csv.DictWriter(fh, fieldnames=COLUMNS)
        writer.writeheader()
        for doc in docs:
            ops = operators.get(doc.id) if operators else None
            for row in span_rows(doc, ops):
                writer.writerow({k: _cell(v) for k, v in row.items()})
                count += 1

    atomic_write_text(path, write)
    return count
