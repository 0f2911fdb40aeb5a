"""BRAT standoff: a ``.txt`` note beside a ``.ann`` file of ``T`` lines (MEDDOCAN is BRAT).

Offsets count characters of the ``.txt`` exactly as stored: no newline
translation, and a leading byte-order mark is character 0 (as in MEDDOCAN).
Only text-bound ``T`` annotations carry spans; attribute, relation, event and
note lines are ignored. Discontinuous spans (``0 5;8 10``) cannot be one span
and are refused rather than silently joined.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

from deid_core.corpus import atomic_write_text, check_layer
from deid_core.errors import CorpusFormatError
from deid_core.formats._common import check_size, decode_utf8, safe_file_stem
from deid_core.spans import Document, Span, sort_spans

_T_LINE = re.compile(r"^(T\d+)\t(\S+) (\d+(?: \d+)*(?:;\d+ \d+)*)(?:\t(.*))?$")
_WS = re.compile(r"\s")


def _read_bytes(p: Path) -> bytes:
    try:
        check_size(p.stat().st_size, str(p))
        return p.read_bytes()
    except OSError as exc:
        raise CorpusFormatError(f"cannot read file: {exc.strerror}", path=str(p)) from exc


def _same_surface(a: str, b: str) -> bool:
    # BRAT writes newlines inside a span as spaces in the .ann text column.
    return _WS.sub(" ", a) == _WS.sub(" ", b)


def parse_ann(
    ann: str, text: str, *, path: str, doc_id: str, source: str = "gold",
    allow_overlap: bool = False,
) -> list[Span]:
    spans: list[Span] = []
    span_lines: list[int] = []
    for lineno, line in enumerate(ann.split("\n"), start=1):
        line = line.rstrip("\r")
        if not line.strip() or not line.startswith("T"):
            continue
        m = _T_LINE.match(line)
        if m is None:
            raise CorpusFormatError(
                "malformed text-bound annotation (expected 'T<n><TAB>LABEL START END<TAB>TEXT')",
                path=path, line=lineno, doc_id=doc_id,
            )
        _tid, label, offsets, surface = m.groups()
        if ";" in offsets:
            raise CorpusFormatError(
                f"discontinuous span ({label}) is not supported; split it into separate T lines",
                path=path, line=lineno, doc_id=doc_id,
            )
        parts = offsets.split(" ")
        if len(parts) != 2:
            raise CorpusFormatError("expected exactly two offsets", path=path, line=lineno, doc_id=doc_id)
        start, end = int(parts[0]), int(parts[1])
        if start >= end or end > len(text):
            raise CorpusFormatError(
                f"offsets {start}..{end} ({label}) are out of range for a text of length {len(text)}",
                path=path, line=lineno, doc_id=doc_id, offset=start,
            )
        if surface is not None and not _same_surface(text[start:end], surface):
            raise CorpusFormatError(
                f"annotated text does not match the .txt at {start}..{end} ({label})",
                path=path, line=lineno, doc_id=doc_id, offset=start,
            )
        spans.append(Span(start, end, label, source, 1.0))
        span_lines.append(lineno)
    check_layer(spans, path=path, doc_id=doc_id, span_lines=span_lines, allow_overlap=allow_overlap)
    return sort_spans(spans)


def read_brat(
    txt_path: str | os.PathLike[str],
    ann_path: str | os.PathLike[str] | None = None,
    *,
    doc_id: str | None = None,
    source: str = "gold",
    allow_overlap: bool = False,
    require_ann: bool = False,
) -> Document:
    """One note; ``ann_path`` defaults to the ``.ann`` beside the ``.txt``.

    A missing ``.ann`` means no spans, unless ``require_ann`` (gold imports):
    then it is an error naming the file, because a gold note without
    annotations would be taken as reviewed and free of PHI.
    """
    tp = Path(txt_path)
    ap = Path(ann_path) if ann_path is not None else tp.with_suffix(".ann")
    did = doc_id or tp.stem
    if require_ann and not ap.is_file():
        raise CorpusFormatError(
            f"no annotation file {ap.name} for this note: a gold import needs a .ann for every"
            " .txt (an empty .ann says the note has no PHI)", path=str(tp), doc_id=did,
        ).with_code("E_MISSING_ANN")
    text = decode_utf8(_read_bytes(tp), str(tp))
    spans: list[Span] = []
    if ann_path is not None or ap.exists():
        ann = decode_utf8(_read_bytes(ap), str(ap))
        spans = parse_ann(ann, text, path=str(ap), doc_id=did, source=source,
                          allow_overlap=allow_overlap)
    return Document(did, text, tuple(spans), {"source_file": tp.name})


def read_brat_dir(
    path: str | os.PathLike[str], *, source: str = "gold", allow_overlap: bool = False,
    require_ann: bool = False,
) -> Iterator[Document]:
    """Every ``.txt`` under a folder with its ``.ann`` (or a single ``.txt``/``.ann`` path)."""
    p = Path(path)
    if p.is_dir():
        for tp in sorted(f for f in p.rglob("*.txt") if f.is_file()):
            rel = tp.relative_to(p).with_suffix("").as_posix()
            yield read_brat(tp, doc_id=rel, source=source, allow_overlap=allow_overlap,
                            require_ann=require_ann)
    elif p.suffix.lower() in (".txt", ".ann") and p.with_suffix(".txt").is_file():
        yield read_brat(p.with_suffix(".txt"), source=source, allow_overlap=allow_overlap,
                        require_ann=require_ann)
    else:
        raise CorpusFormatError("expected a folder of .txt/.ann pairs or a .txt file", path=str(p))


def format_ann(doc: Document) -> str:
    lines = []
    for i, s in enumerate(sort_spans(doc.spans), start=1):
        surface = _WS.sub(" ", doc.text[s.start : s.end])
        lines.append(f"T{i}\t{s.label} {s.start} {s.end}\t{surface}\n")
    return "".join(lines)


def write_brat(doc: Document, directory: str | os.PathLike[str]) -> tuple[Path, Path]:
    """Write ``<id>.txt`` and ``<id>.ann`` atomically; returns both paths."""
    for s in doc.spans:
        if " " in s.label or "\t" in s.label:
            raise CorpusFormatError(
                f"label {s.label!r} contains whitespace, which BRAT cannot store", doc_id=doc.id
            )
    d = Path(directory)
    stem = safe_file_stem(doc.id)
    txt, ann = d / f"{stem}.txt", d / f"{stem}.ann"
    # newline="" semantics: write the text byte-exact so offsets stay true.
    atomic_write_text(txt, lambda fh: fh.write(doc.text.encode("utf-8")), mode="wb")
    atomic_write_text(ann, lambda fh: fh.write(format_ann(doc).encode("utf-8")), mode="wb")
    return txt, ann
