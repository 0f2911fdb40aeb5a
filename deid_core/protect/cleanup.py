"""Remove what a killed export or training run left behind.

An export writes into a staging folder beside its target
(``.<target>.staging-<host>-<pid>-<random>``) and renames it into place;
training writes its CRF into ``deid-train-<host>-<pid>-<random>`` under the
temporary directory. A crash leaves these folders (one killed export left
7,760 files). They are removed on the next start (the app, ``export``,
``train``) and by ``deid-workbench db cleanup``, but only when the process
named in the folder is gone: a folder of this host whose pid is not running,
or a folder without a pid (older versions) or of another host that has not
changed for ``stale_after`` seconds.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from deid_core.store.owner import owner_gone, owner_tag

#: Folders without a live owner we can check are removed once unchanged this long.
STALE_AFTER_S = 24 * 3600
_OWNED = re.compile(r"-(?P<tag>[A-Za-z0-9_.]+-\d+)-[A-Za-z0-9_]+$")


def staging_prefix(target_name: str) -> str:
    return f".{target_name}.staging-{owner_tag()}-"


def _stale(path: Path, now: float, stale_after: float) -> bool:
    m = _OWNED.search(path.name)
    gone = owner_gone(m.group("tag")) if m is not None else None
    if gone is not None:
        return gone
    try:
        return now - path.stat().st_mtime > stale_after
    except OSError:
        return False


@dataclass(frozen=True, slots=True)
class CleanupResult:
    removed: tuple[str, ...]
    files: int
    bytes: int


def _size(path: Path) -> tuple[int, int]:
    files = size = 0
    for p in path.rglob("*"):
        try:
            if p.is_file():
                files += 1
                size += p.stat().st_size
        except OSError:
            continue
    return files, size


def find_debris(export_roots: Iterable[str | os.PathLike[str]] = (), *,
                temp_dir: str | None = None, stale_after: float = STALE_AFTER_S) -> list[Path]:
    """Stale staging folders directly under each export root, and stale training folders."""
    now = time.time()
    found: list[Path] = []
    for root in export_roots:
        r = Path(root)
        if r.is_dir():
            found += [p for p in r.iterdir()
                      if p.is_dir() and p.name.startswith(".") and ".staging-" in p.name
                      and _stale(p, now, stale_after)]
    tmp = Path(temp_dir or tempfile.gettempdir())
    if tmp.is_dir():
        found += [p for p in tmp.iterdir()
                  if p.is_dir() and p.name.startswith("deid-train-") and _stale(p, now, stale_after)]
    return sorted(found)


def clean_debris(export_roots: Iterable[str | os.PathLike[str]] = (), *,
                 temp_dir: str | None = None, stale_after: float = STALE_AFTER_S) -> CleanupResult:
    """Remove the folders ``find_debris`` names; returns what went (paths, files, bytes)."""
    removed: list[str] = []
    files = size = 0
    for path in find_debris(export_roots, temp_dir=temp_dir, stale_after=stale_after):
        n, b = _size(path)
        shutil.rmtree(path, ignore_errors=True)
        if not path.exists():
            removed.append(str(path))
            files, size = files + n, size + b
    return CleanupResult(tuple(removed), files, size)
