"""Helpers the format readers share: strict decoding and span checks that never quote text."""

from __future__ import annotations

import re

from deid_core.errors import CorpusFormatError

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


def safe_file_stem(doc_id: str) -> str:
    """A file name for a document id: ids may come from anywhere, paths must not escape."""
    stem = _UNSAFE_STEM.sub("_", doc_id).lstrip(".")
    if not stem:
        raise CorpusFormatError(f"document id {doc_id!r} cannot be used as a file name")
    return stem
