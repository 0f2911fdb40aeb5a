"""Helpers the format readers share: strict decoding and span checks that never quote text."""

from __future__ import annotations

import re
from collections.abc import Sequence

from deid_core.errors import CorpusFormatError
from deid_core.spans import Span, find_overlap

#: A single note larger than this is refused: it is almost certainly not a note.
MAX_NOTE_BYTES = 32 * 1024 * 1024

_UNSAFE_STEM = re.compile(r"[^A-Za-z0-9._-]")


def decode_utf8(data: bytes, path: str, *, line_offset: int = 0) -> str:
    """Decode strictly; the error names the line and byte offset of the first bad byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1 + line_offset
        raise CorpusFormatError(
            f"not valid UTF-8 (byte offset {exc.start}); re-encode the file as UTF-8",
            path=path,
            line=line,
        ) from None


def check_size(size: int, path: str) -> None:
    if size > MAX_NOTE_BYTES:
        raise CorpusFormatError(
            f"file is {size} bytes, more than the {MAX_NOTE_BYTES}-byte limit for one note",
            path=path,
        )


def check_layer(spans: Sequence[Span], path: str, doc_id: str, *, allow_overlap: bool) -> None:
    """Duplicate spans and (unless allowed) overlaps are errors: one layer, one reading."""
    seen: set[tuple[int, int, str]] = set()
    for i, span in enumerate(spans):
        if span.key in seen:
            raise CorpusFormatError(
                f"duplicate span {span.start}..{span.end} ({span.label})",
                path=path, doc_id=doc_id, span_index=i, offset=span.start,
            )
        seen.add(span.key)
    if not allow_overlap:
        pair = find_overlap(spans)
        if pair is not None:
            a, b = pair
            raise CorpusFormatError(
                f"spans {a.start}..{a.end} ({a.label}) and {b.start}..{b.end} ({b.label}) overlap",
                path=path, doc_id=doc_id, offset=b.start,
            )


def safe_file_stem(doc_id: str) -> str:
    """A file name for a document id: ids may come from anywhere, paths must not escape."""
    stem = _UNSAFE_STEM.sub("_", doc_id).lstrip(".")
    if not stem:
        raise CorpusFormatError(f"document id {doc_id!r} cannot be used as a file name")
    return stem
