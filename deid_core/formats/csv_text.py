"""Notes in a CSV file: one row per note; the user says which columns hold text, id and patient.

The file is decoded strictly as UTF-8 (a BOM is allowed) before parsing, so a
Latin-1 export fails with the line of the first bad byte instead of importing
mangled characters whose offsets would not match later annotations.
"""

from __future__ import annotations

import csv
import io
import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

from deid_core.errors import CorpusFormatError
from deid_core.formats._common import MAX_NOTE_BYTES, decode_utf8
from deid_core.spans import Document

#: A CSV larger than this is refused (notes are read into memory to decode strictly).
MAX_CSV_BYTES = 2 * 1024 * 1024 * 1024


def read_csv(
    path: str | os.PathLike[str],
    *,
    text_column: str = "text",
    id_column: str | None = None,
    patient_column: str | None = None,
    delimiter: str = ",",
    known_columns: Mapping[str, str] | None = None,
) -> Iterator[Document]:
    """Yield one document per row; the id defaults to ``<file stem>:<row number>``.

    ``known_columns`` maps columns of identifiers from the structured record
    (patient name, MRN, date of birth, ...) to labels; their non-empty values go
    to ``meta["known_phi"]`` as ``{label, value}`` items.

    Raises ``CorpusFormatError`` naming the column and file when a chosen column
    is missing, and the line for an empty text, a duplicate id or a ragged row.
    """
    p = Path(path)
    where = str(p)
    try:
        size = p.stat().st_size
        if size > MAX_CSV_BYTES:
            raise CorpusFormatError(f"file is larger than {MAX_CSV_BYTES} bytes", path=where)
        data = p.read_bytes()
    except OSError as exc:
        raise CorpusFormatError(f"cannot read file: {exc.strerror}", path=where) from exc
    text = decode_utf8(data, where)
    if text.startswith("\ufeff"):
        text = text[1:]
    csv.field_size_limit(min(sys.maxsize, MAX_NOTE_BYTES))
    reader = csv.DictReader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    try:
        header = reader.fieldnames
    except csv.Error as exc:
        raise CorpusFormatError(f"malformed CSV header ({exc})", path=where, line=1) from None
    if not header:
        raise CorpusFormatError("empty CSV file (no header row)", path=where)
    known = dict(known_columns or {})
    roles = [("text", text_column), ("id", id_column), ("patient", patient_column)]
    for role, col in [*roles, *(("known identifier", c) for c in known)]:
        if col is not None and col not in header:
            raise CorpusFormatError(
                f"{role} column {col!r} is not in the header (columns: {', '.join(header)})",
                path=where, line=1,
            )
    seen: set[str] = set()
    row_no = 0
    while True:
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            raise CorpusFormatError(f"malformed CSV ({exc})", path=where, line=reader.line_num) from None
        row_no += 1
        line = reader.line_num
        if None in row:
            raise CorpusFormatError("row has more fields than the header", path=where, line=line)
        note = row.get(text_column)
        if note is None:
            raise CorpusFormatError("row has fewer fields than the header", path=where, line=line)
        if not note.strip():
            raise CorpusFormatError(f"empty text in column {text_column!r}", path=where, line=line)
        doc_id = (row.get(id_column) or "").strip() if id_column else f"{p.stem}:{row_no}"
        if not doc_id:
            raise CorpusFormatError(f"empty id in column {id_column!r}", path=where, line=line)
        if doc_id in seen:
            raise CorpusFormatError("duplicate document id", path=where, line=line, doc_id=doc_id)
        seen.add(doc_id)
        meta: dict[str, object] = {"source_file": p.name, "source_line": line}
        if patient_column:
            patient = (row.get(patient_column) or "").strip()
            if patient:
                meta["patient_id"] = patient
        items = [{"label": label, "value": (row.get(col) or "").strip()} for col, label in known.items()]
        if any(i["value"] for i in items):
            meta["known_phi"] = [i for i in items if i["value"]]
        yield Document(doc_id, note, (), meta)
