"""Import page checks that run before anything is read into the store.

A file whose name or content says it is in another format than the one picked
is refused by name, so that, for example, a ``.jsonl`` file imported as plain
text does not become a single note of raw JSON.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

#: Which import formats accept a file with this suffix.
SUFFIX_FORMATS: dict[str, tuple[str, ...]] = {
    ".jsonl": ("jsonl",),
    ".json": ("jsonl",),
    ".ndjson": ("jsonl",),
    ".txt": ("txt", "brat"),
    ".zip": ("txt",),
    ".csv": ("csv",),
    ".tsv": ("csv",),
    ".ann": ("brat",),
    ".xml": ("i2b2",),
}


def _suffix(name: str) -> str:
    dot = name.rfind(".")
    return name[dot:].lower() if dot > 0 else ""


def _looks_like_json_lines(data: bytes) -> bool:
    first = data.lstrip()[:65536].split(b"\n", 1)[0].strip()
    if not first.startswith(b"{"):
        return False
    try:
        return isinstance(json.loads(first), dict)
    except (ValueError, UnicodeDecodeError):
        return False


def format_mismatch(fmt: str, files: Sequence[tuple[str, bytes]]) -> str | None:
    """Why these ``(file name, content)`` pairs do not fit ``fmt``, or ``None`` when they do.

    The message names the file and the format to pick; it never quotes content.
    """
    for name, data in files:
        allowed = SUFFIX_FORMATS.get(_suffix(name))
        if allowed is not None and fmt not in allowed:
            return (f"{name} is a {_suffix(name)} file, which the {fmt} format does not read:"
                    f" pick the {' or '.join(allowed)} format.")
        if fmt == "txt" and _suffix(name) != ".zip" and _looks_like_json_lines(data):
            return (f"{name}, line 1 is a JSON object: this looks like JSON Lines, not a plain-text"
                    " note. Pick the jsonl format.")
    return None
