"""Plain-text notes: single ``.txt`` files, folders of them, and zip files of them.

The document id is the file's path relative to the folder or zip, without
``.txt``, so that two notes named alike in different sub-folders stay distinct.
Zip entries are read in memory (never extracted), with size limits, so a zip
bomb or a path-traversal entry cannot touch the disk.
"""

from __future__ import annotations

import os
import zipfile
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from deid_core.errors import CorpusFormatError
from deid_core.formats._common import MAX_NOTE_BYTES, check_size, decode_utf8
from deid_core.spans import Document

#: Total uncompressed bytes read from one zip file (default; ``$DEID_MAX_ZIP_BYTES`` overrides).
MAX_ZIP_BYTES = 4 * 1024 * 1024 * 1024
ENV_MAX_ZIP_BYTES = "DEID_MAX_ZIP_BYTES"
#: A member expanding more than this many times its compressed size is refused (a zip bomb).
MAX_ZIP_RATIO = 100


def max_zip_bytes() -> int:
    raw = os.environ.get(ENV_MAX_ZIP_BYTES)
    if not raw:
        return MAX_ZIP_BYTES
    try:
        return max(0, int(raw))
    except ValueError:
        raise CorpusFormatError(f"{ENV_MAX_ZIP_BYTES} must be a whole number of bytes") from None


def _check_ratio(size: int, compressed: int, where: str) -> None:
    if size > MAX_ZIP_RATIO * max(compressed, 1):
        raise CorpusFormatError(
            f"zip member expands {size // max(compressed, 1)}:1 ({compressed} to {size} bytes),"
            f" more than the {MAX_ZIP_RATIO}:1 allowed; this looks like a zip bomb",
            path=where,
        ).with_code("E_ZIP_RATIO")


def read_txt(path: str | os.PathLike[str], *, doc_id: str | None = None) -> Document:
    p = Path(path)
    try:
        check_size(p.stat().st_size, str(p))
        data = p.read_bytes()
    except OSError as exc:
        raise CorpusFormatError(f"cannot read file: {exc.strerror}", path=str(p)) from exc
    text = decode_utf8(data, str(p))
    return Document(doc_id or p.stem, text, (), {"source_file": p.name})


def _iter_zip(p: Path, suffix: str) -> Iterator[tuple[str, str, bytes]]:
    """Yield ``(entry name, id, bytes)`` for zip entries ending in ``suffix``."""
    try:
        zf = zipfile.ZipFile(p)
    except zipfile.BadZipFile as exc:
        raise CorpusFormatError(f"not a readable zip file (truncated or corrupt: {exc})", path=str(p)) from None
    except OSError as exc:
        raise CorpusFormatError(f"cannot read file: {exc.strerror}", path=str(p)) from exc
    total = 0
    with zf:
        infos = sorted(
            (i for i in zf.infolist() if not i.is_dir() and i.filename.lower().endswith(suffix)),
            key=lambda i: i.filename,
        )
        limit = max_zip_bytes()
        for info in infos:
            where = f"{p}!{info.filename}"
            check_size(info.file_size, where)
            _check_ratio(info.file_size, info.compress_size, where)
            total += info.file_size
            if total > limit:
                raise CorpusFormatError(
                    f"zip holds more than {limit} bytes of notes (limit: {ENV_MAX_ZIP_BYTES})",
                    path=str(p),
                ).with_code("E_ZIP_TOTAL")
            try:
                with zf.open(info) as fh:
                    # Headers can lie: read no more than the declared size allows, then check.
                    data = fh.read(min(MAX_NOTE_BYTES, MAX_ZIP_RATIO * max(info.compress_size, 1)) + 1)
            except (zipfile.BadZipFile, EOFError, OSError, zipfile.LargeZipFile) as exc:
                raise CorpusFormatError(
                    f"zip entry cannot be read (truncated or corrupt: {type(exc).__name__})", path=where
                ) from None
            check_size(len(data), where)
            _check_ratio(len(data), info.compress_size, where)
            stem = str(PurePosixPath(info.filename).with_suffix(""))
            yield where, stem, data


def iter_txt(path: str | os.PathLike[str]) -> Iterator[Document]:
    """Documents from a ``.txt`` file, a folder (recursively) or a ``.zip`` of ``.txt`` files."""
    p = Path(path)
    if p.is_dir():
        files = sorted(f for f in p.rglob("*") if f.is_file() and f.suffix.lower() == ".txt")
        for f in files:
            rel = f.relative_to(p).with_suffix("").as_posix()
            yield read_txt(f, doc_id=rel)
    elif p.suffix.lower() == ".zip":
        for where, stem, data in _iter_zip(p, ".txt"):
            text = decode_utf8(data, where)
            yield Document(stem, text, (), {"source_file": where.rsplit("!", 1)[1]})
    elif p.is_file():
        yield read_txt(p)
    else:
        raise CorpusFormatError("no such file or folder", path=str(p))
