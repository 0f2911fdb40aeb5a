"""Read and write the shared JSONL span format (see ../shared/data/README.md).

One document per line: ``{"id", "text", "spans": [{"start", "end", "label", "text"}], "meta"}``.
Spans may also carry ``source`` and ``score``, which the project writes.

Reading is all or nothing: ``read_jsonl`` validates the whole file before it
returns, so a caller never holds half a corpus. ``iter_jsonl`` streams for very
large files and raises at the first bad line. Writing goes to a temporary file
that is renamed into place, so a crash never leaves a half-written corpus.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from deid_core.errors import CorpusFormatError, EmptyInput, InvalidSpan
from deid_core.spans import Document, Span, find_overlap, sort_spans

#: Lines longer than this are refused rather than parsed: a guard against a
#: file that is not JSONL at all (one multi-gigabyte line).
MAX_LINE_BYTES = 64 * 1024 * 1024


def span_from_dict(
    raw: Any,
    text: str,
    *,
    path: str | None = None,
    line: int | None = None,
    doc_id: str | None = None,
    index: int | None = None,
    check_text: bool = True,
) -> Span:
    def fail(message: str, offset: int | None = None) -> CorpusFormatError:
        return CorpusFormatError(
            message, path=path, line=line, doc_id=doc_id, span_index=index, offset=offset
        )

    if not isinstance(raw, dict):
        raise fail("a span must be a JSON object")
    for key in ("start", "end", "label"):
        if key not in raw:
            raise fail(f"span is missing {key!r}")
    start, end, label = raw["start"], raw["end"], raw["label"]
    if type(start) is not int or type(end) is not int:
        raise fail("span start and end must be integers")
    if not isinstance(label, str) or not label:
        raise fail("span label must be a non-empty string")
    if start < 0 or end > len(text) or start >= end:
        raise fail(
            f"offsets {start}..{end} are out of range for a text of length {len(text)}",
            offset=start,
        )
    if check_text and "text" in raw and text[start:end] != raw["text"]:
        # Never quote either string: both are note text.
        raise fail(
            f"span text does not match the document text at {start}..{end} ({label})",
            offset=start,
        )
    source = raw.get("source", "gold")
    score = raw.get("score", 1.0)
    if not isinstance(source, str) or not isinstance(score, (int, float)):
        raise fail("span source must be a string and score a number")
    try:
        return Span(start, end, label, source, float(score))
    except InvalidSpan as exc:  # pragma: no cover - guarded above
        raise fail(str(exc), offset=start) from exc


def document_from_dict(
    raw: Any,
    *,
    path: str | None = None,
    line: int | None = None,
    allow_overlap: bool = False,
    check_text: bool = True,
) -> Document:
    if not isinstance(raw, dict):
        raise CorpusFormatError("each line must be a JSON object", path=path, line=line)
    doc_id = raw.get("id")
    if not isinstance(doc_id, (str, int)) or doc_id == "":
        raise CorpusFormatError("document has no usable 'id'", path=path, line=line)
    doc_id = str(doc_id)
    text = raw.get("text")
    if not isinstance(text, str):
        raise CorpusFormatError("document 'text' must be a string", path=path, line=line, doc_id=doc_id)
    raw_spans = raw.get("spans", [])
    if not isinstance(raw_spans, list):
        raise CorpusFormatError("'spans' must be a list", path=path, line=line, doc_id=doc_id)
    meta = raw.get("meta", {})
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        raise CorpusFormatError("'meta' must be an object", path=path, line=line, doc_id=doc_id)
    spans = [
        span_from_dict(
            s, text, path=path, line=line, doc_id=doc_id, index=i, check_text=check_text
        )
        for i, s in enumerate(raw_spans)
    ]
    check_layer(spans, path=path, line=line, doc_id=doc_id, allow_overlap=allow_overlap)
    return Document(doc_id, text, tuple(sort_spans(spans)), meta)


def check_layer(
    spans: Sequence[Span],
    *,
    path: str | None = None,
    line: int | None = None,
    doc_id: str | None = None,
    span_lines: Sequence[int | None] | None = None,
    allow_overlap: bool = False,
) -> None:
    """One annotation layer, one reading: duplicate spans and (unless allowed) overlaps are errors.

    Every reader (JSONL, BRAT, i2b2 XML, CSV) checks its layer here. ``span_lines``
    gives each span's own line where a format has one (a BRAT ``.ann`` line, an
    i2b2 tag), so the error points at it; otherwise ``line`` is the document's.
    """

    def at(i: int) -> int | None:
        return span_lines[i] if span_lines is not None else line

    first: dict[tuple[int, int, str], int] = {}
    for i, span in enumerate(spans):
        if span.key in first:
            where = f", first on line {at(first[span.key])}" if span_lines is not None else ""
            raise CorpusFormatError(
                f"duplicate span {span.start}..{span.end} ({span.label}){where}",
                path=path, line=at(i), doc_id=doc_id, span_index=i, offset=span.start,
            )
        first[span.key] = i
    if allow_overlap:
        return
    pair = find_overlap(spans)
    if pair is not None:
        a, b = pair
        ia, ib = first[a.key], first[b.key]
        lines = f" (lines {at(ia)} and {at(ib)})" if span_lines is not None else ""
        raise CorpusFormatError(
            f"spans {a.start}..{a.end} ({a.label}) and {b.start}..{b.end} ({b.label}) overlap{lines}",
            path=path, line=at(ib), doc_id=doc_id, span_index=ib, offset=b.start,
        )


def document_to_dict(doc: Document, *, provenance: bool = True) -> dict[str, Any]:
    spans = []
    for s in sort_spans(doc.spans):
        item: dict[str, Any] = {
            "start": s.start,
            "end": s.end,
            "label": s.label,
            "text": doc.text[s.start : s.end],
        }
        if provenance:
            item["source"] = s.source
            item["score"] = round(s.score, 6)
        spans.append(item)
    return {"id": doc.id, "text": doc.text, "spans": spans, "meta": doc.meta}


#: Deepest JSON nesting accepted in one line (a document is 4 levels; meta may add a few).
MAX_JSON_DEPTH = 32


def _reject_constant(name: str) -> Any:
    raise ValueError(name)


def _check_json_value(value: Any, *, path: str, line: int, depth: int = 1) -> None:
    """Depth, finiteness and valid Unicode for one parsed line, with its place named."""
    if depth > MAX_JSON_DEPTH:
        raise CorpusFormatError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels", path=path,
                                line=line).with_code("E_JSON_DEPTH")
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise CorpusFormatError(
                "a string holds a lone surrogate (\\ud800-\\udfff escape), which is not valid"
                " Unicode", path=path, line=line, offset=exc.start,
            ).with_code("E_UNICODE") from None
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise CorpusFormatError("a number is out of range (infinite)", path=path,
                                    line=line).with_code("E_NAN")
    elif isinstance(value, dict):
        for k, v in value.items():
            _check_json_value(k, path=path, line=line, depth=depth + 1)
            _check_json_value(v, path=path, line=line, depth=depth + 1)
    elif isinstance(value, list):
        for v in value:
            _check_json_value(v, path=path, line=line, depth=depth + 1)


def parse_json_line(text: str, *, path: str, line: int) -> Any:
    """``json.loads`` with the faults a note file can hold turned into located, coded errors.

    NaN and Infinity (Python's json accepts them; PostgreSQL JSON does not),
    nesting deeper than ``MAX_JSON_DEPTH`` (a RecursionError otherwise), and
    lone surrogates (a UnicodeEncodeError at the database otherwise).
    """
    where = line
    try:
        raw = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise CorpusFormatError(
            f"malformed JSON ({exc.msg} at column {exc.colno})", path=path, line=where,
            offset=exc.pos,
        ) from None
    except ValueError as exc:
        raise CorpusFormatError(f"JSON holds {exc.args[0]}, which is not a number we accept",
                                path=path, line=where).with_code("E_NAN") from None
    except RecursionError:
        raise CorpusFormatError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels", path=path,
                                line=where).with_code("E_JSON_DEPTH") from None
    _check_json_value(raw, path=path, line=where)
    return raw


def iter_jsonl(
    path: str | os.PathLike[str], *, allow_overlap: bool = False, check_text: bool = True
) -> Iterator[Document]:
    """Stream documents; raises ``CorpusFormatError`` naming file and line at the first fault."""
    p = str(path)
    seen_ids: set[str] = set()
    try:
        fh = open(p, "rb")
    except OSError as exc:
        raise CorpusFormatError(f"cannot open file: {exc.strerror}", path=p) from exc
    with fh:
        for lineno, raw_line in enumerate(fh, start=1):
            if len(raw_line) > MAX_LINE_BYTES:
                raise CorpusFormatError(
                    f"line is longer than {MAX_LINE_BYTES} bytes", path=p, line=lineno
                )
            try:
                line = raw_line.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise CorpusFormatError(
                    f"not valid UTF-8 (byte offset {exc.start} in the line)", path=p, line=lineno
                ) from None
            if lineno == 1 and line.startswith("\ufeff"):
                line = line[1:]  # a BOM before the first JSON object, not inside a text
            if not line.strip():
                continue
            raw = parse_json_line(line, path=p, line=lineno)
            doc = document_from_dict(
                raw, path=p, line=lineno, allow_overlap=allow_overlap, check_text=check_text
            )
            if doc.id in seen_ids:
                raise CorpusFormatError("duplicate document id", path=p, line=lineno, doc_id=doc.id)
            seen_ids.add(doc.id)
            yield doc


def read_nonempty_jsonl(path: str | os.PathLike[str], **kwargs: Any) -> list[Document]:
    """``read_jsonl`` for inputs where no notes makes no sense (train, evaluate, bias sweep)."""
    docs = read_jsonl(path, **kwargs)
    if not docs:
        raise EmptyInput("no notes in this file", path=str(path))
    return docs


def read_jsonl(
    path: str | os.PathLike[str], *, allow_overlap: bool = False, check_text: bool = True
) -> list[Document]:
    """Read a whole corpus, or raise without returning any of it."""
    return list(iter_jsonl(path, allow_overlap=allow_overlap, check_text=check_text))


def file_sha256(path: str | os.PathLike[str]) -> str:
    """SHA-256 of a file's bytes, read in blocks (training files can be large)."""
    import hashlib

    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def file_corpus_reference(path: str | os.PathLike[str], n_documents: int) -> dict[str, Any]:
    """What a model trained from a file records under ``metadata["corpus"]``.

    A retrain rebuilds the training set from it (``deid_core.learning.retrain``)
    and refuses if the file is gone or changed, rather than train on something else.
    """
    return {
        "kind": "file",
        "path": str(Path(path).resolve()),
        "sha256": file_sha256(path),
        "documents": int(n_documents),
    }


def atomic_write_text(path: str | os.PathLike[str], write: Any, *, mode: str = "w") -> None:
    """Call ``write(fh)`` on a temporary file beside ``path`` and rename it into place."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        kwargs: dict[str, Any] = {} if "b" in mode else {"encoding": "utf-8", "newline": "\n"}
        with os.fdopen(fd, mode, **kwargs) as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def write_jsonl(
    path: str | os.PathLike[str], docs: Iterable[Document], *, provenance: bool = True
) -> int:
    """Write documents atomically; returns how many were written."""
    count = 0

    def _write(fh: Any) -> None:
        nonlocal count
        for doc in docs:
            fh.write(json.dumps(document_to_dict(doc, provenance=provenance), ensure_ascii=False))
            fh.write("\n")
            count += 1

    atomic_write_text(path, _write)
    return count
