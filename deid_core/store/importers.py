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
from deid_core.errors import CorpusFormatError, EmptyInput, StoreError
from deid_core.formats import iter_txt, read_brat_dir, read_csv, read_i2b2_xml
from deid_core.schemes import load_scheme
from deid_core.spans import Document
from deid_core.store.authz import SYSTEM, Actor
from deid_core.store.repository import (
    ImportResult,
    Progress,
    check_import_doc,
    get_project,
    import_documents,
)

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
    require_ann: bool = False,
    allowed_labels: frozenset[str] | None = None,
    known_columns: Mapping[str, str] | None = None,
) -> Iterator[Document]:
    """Stream documents from every path in the given format (errors name file, line, offset).

    Each path must hold at least one note: an empty file or folder is an
    ``EmptyInput`` (``E_EMPTY``) naming it, not a silent empty batch.
    """
    if fmt not in FORMATS:
        raise StoreError(f"unknown import format {fmt!r}: use one of {', '.join(FORMATS)}")
    for raw in paths:
        p = Path(raw)
        if fmt == "jsonl":
            docs = iter_jsonl(p)
        elif fmt == "txt":
            docs = iter_txt(p)
        elif fmt == "csv":
            docs = read_csv(p, text_column=text_column, id_column=id_column,
                            patient_column=patient_column, delimiter=delimiter,
                            known_columns=known_columns)
        elif fmt == "brat":
            docs = read_brat_dir(p, require_ann=require_ann)
        else:
            docs = _iter_i2b2(p, "gold")
        n = 0
        for doc in docs:
            n += 1
            try:
                # What the store would refuse, refused here where the file is known.
                check_import_doc(doc, allowed_labels)
            except CorpusFormatError as exc:
                reason = exc.reason if exc.doc_id else f"{exc.reason} (note {n} of the file)"
                raise CorpusFormatError(
                    reason, path=exc.path or str(p), line=exc.line, doc_id=exc.doc_id,
                    span_index=exc.span_index, offset=exc.offset,
                ).with_code(exc.code) from None
            yield doc
        if n == 0:
            what = {"brat": "no .txt notes (a BRAT folder needs .txt files beside the .ann files)",
                    "csv": "no rows after the header"}.get(fmt, f"no {fmt} notes")
            raise EmptyInput(f"nothing to import: {what}", path=str(p))


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
    actor: Actor = SYSTEM,
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
    allowed = (frozenset(load_scheme(get_project(engine, project).scheme).names)
               if annotations == "gold" else None)
    docs = read_documents(fmt, ps, text_column=text_column, id_column=id_column,
                          patient_column=patient_column, delimiter=delimiter,
                          require_ann=annotations == "gold", allowed_labels=allowed,
                          known_columns=known_columns)
    return import_documents(
        engine, project, docs, annotations=annotations, fmt=fmt,
        source=", ".join(str(p) for p in ps), actor=actor, progress=progress,
        total=_estimate(fmt, ps),
    )
