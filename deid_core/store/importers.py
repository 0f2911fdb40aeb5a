"""Bring notes into a project from files: JSONL, plain text (files, folders, zips), CSV, BRAT, i2b2 XML.

Each call is one batch and one transaction: readers stream documents into
``repository.import_documents``, and the first format error (which names the
file, line and offset) rolls back everything the batch had written.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from sqlalchemy.engine import Engine

from deid_core.corpus import iter_jsonl
from deid_core.errors import CorpusFormatError, StoreError
from deid_core.formats import iter_txt, read_brat_dir, read_csv, read_i2b2_xml
from deid_core.spans import Document
from deid_core.store.repository import ImportResult, Progress, import_documents

FORMATS = ("jsonl", "txt", "csv", "brat", "i2b2")
#: Formats that carry no spans: importing them as gold would mark every note PHI-free.
_SPANLESS = ("txt", "csv")


def _count_lines(p: Path) -> int:
    n = 0
    with open(p, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            n += chunk.count(b"\n")
    return n


def _estimate(fmt: str, paths: Sequence[Path]) -> int | None:
    """A cheap total for the progress bar (no parsing); None when unknown."""
    total = 0
    for p in paths:
        if not p.exists():
            return None
        if fmt == "jsonl" and p.is_file():
            total += _count_lines(p)
        elif fmt in ("txt", "brat") and p.is_dir():
            total += sum(1 for _ in p.rglob("*.txt"))
        elif fmt == "i2b2" and p.is_dir():
            total += sum(1 for _ in p.rglob("*.xml"))
        elif p.is_file() and fmt in ("txt", "brat", "i2b2"):
            total += 1
        else:
            return None
    return total or None


def _iter_i2b2(p: Path, source: str) -> Iterator[Document]:
    if p.is_dir():
        for f in sorted(x for x in p.rglob("*") if x.is_file() and x.suffix.lower() == ".xml"):
            yield read_i2b2_xml(f, doc_id=f.relative_to(p).with_suffix("").as_posix(),
                                source=source)
    elif p.is_file():
        yield read_i2b2_xml(p, source=source)
    else:
        raise CorpusFormatError("no such file or folder", path=str(p))


def read_documents(
    fmt: str,
    paths: Sequence[str | os.PathLike[str]],
    *,
    text_column: str = "text",
    id_column: str | None = None,
    patient_column: str | None = None,
    delimiter: str = ",",
    known_columns: Mapping[str, str] | None = None,
) -> Iterator[Document]:
    """Stream documents from every path in the given format (errors name file, line, offset)."""
    if fmt not in FORMATS:
        raise StoreError(f"unknown import format {fmt!r}: use one of {', '.join(FORMATS)}")
    for raw in paths:
        p = Path(raw)
        if fmt == "jsonl":
            yield from iter_jsonl(p)
        elif fmt == "txt":
            yield from iter_txt(p)
        elif fmt == "csv":
            yield from read_csv(p, text_column=text_column, id_column=id_column,
                                patient_column=patient_column, delimiter=delimiter,
                                known_columns=known_columns)
        elif fmt == "brat":
            yield from read_brat_dir(p)
        else:
            yield from _iter_i2b2(p, "gold")


def import_paths(
    engine: Engine,
    project: str,
    paths: Sequence[str | os.PathLike[str]],
    *,
    fmt: str,
    annotations: str = "none",
    text_column: str = "text",
    id_column: str | None = None,
    patient_column: str | None = None,
    delimiter: str = ",",
    known_columns: Mapping[str, str] | None = None,
    actor: str = "system",
    progress: Progress | None = None,
) -> ImportResult:
    """Import files as one all-or-nothing batch; duplicates (same sha256) are skipped and listed.

    ``annotations``: ``gold`` (the file's spans become the reviewed layer),
    ``predictions`` (they become a prediction to review) or ``none``.
    """
    if not paths:
        raise StoreError("nothing to import: give at least one path")
    if fmt in _SPANLESS and annotations != "none":
        raise StoreError(
            f"{fmt} files carry no annotations: import them with annotations 'none' (importing"
            " them as gold would mark every note as free of PHI)"
        )
    ps = [Path(p) for p in paths]
    docs = read_documents(fmt, ps, text_column=text_column, id_column=id_column,
                          patient_column=patient_column, delimiter=delimiter, known_columns=known_columns)
    return import_documents(
        engine, project, docs, annotations=annotations, fmt=fmt,
        source=", ".join(str(p) for p in ps), actor=actor, progress=progress,
        total=_estimate(fmt, ps),
    )
