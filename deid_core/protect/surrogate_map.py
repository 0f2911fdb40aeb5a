"""The consistency mapping: which surrogate replaced which (hashed) original.

Surrogates are a pure function of ``(secret, scope, kind, normalised value)``
(see ``deid_core.protect.surrogates``), so partitions of a corpus processed on
different workers agree without sharing state. The mapping store therefore
does not *decide* surrogates; it *records* them, keyed by an HMAC-SHA256 of
the original under the project secret, so that:

- an admin can audit or export which surrogates were used, and a holder of the
  secret who already knows an original can find its surrogate, while the
  mapping itself never contains an original string (without the secret a key
  says nothing about its value);
- collisions (two different originals of one scope that drew the same
  surrogate, which would merge two people) are detected and reported.

``InMemorySurrogateMapping`` serves the CLI; the database-backed store
implements the same ``SurrogateMapping`` protocol.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from deid_core.corpus import atomic_write_text
from deid_core.errors import DeidError, MappingConflict, PermissionDenied

CORPUS_SCOPE = "corpus"
MIN_SECRET_BYTES = 16
ENV_DATA_DIR = "DEID_DATA_DIR"


def read_secret(path: str | os.PathLike[str]) -> bytes:
    """A secret file holds hex (as ``load_or_create_secret`` writes it) or any text of
    at least 16 bytes."""
    p = Path(path)
    try:
        raw = p.read_bytes().strip()
    except OSError as exc:
        raise DeidError(f"{p}: cannot read the secret file ({exc.strerror})") from None
    try:
        secret = bytes.fromhex(raw.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        secret = raw
    if len(secret) < MIN_SECRET_BYTES:
        raise DeidError(f"{p}: the secret must hold at least {MIN_SECRET_BYTES} bytes")
    return secret


def load_or_create_secret(path: str | os.PathLike[str]) -> tuple[bytes, bool]:
    """``(secret, created)``: read the file, or create it (32 random bytes, hex, mode 0600).

    Re-runs must reuse the secret to give the same surrogates and date offsets;
    whoever holds it can recompute offsets and test guessed originals, so it is
    kept apart from exported files. ``O_EXCL`` makes two concurrent first runs
    agree on one secret instead of overwriting each other.
    """
    p = Path(path)
    if not p.exists():
        p.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            return read_secret(p), False
        with os.fdopen(fd, "w", encoding="ascii") as fh:
            fh.write(secrets.token_hex(32) + "\n")
        return read_secret(p), True
    return read_secret(p), False


def default_secret_path(project_id: int) -> Path:
    """Where a project's secret lives: ``<data dir>/secrets/project-<id>.secret``, with the
    data dir ``$DEID_DATA_DIR`` or the per-user data directory, never the checkout or an
    export folder. The app's Export page (``deid_core.ui.exporting.project_secret``) uses
    the same file, so the CLI and the app export a project with the same surrogates."""
    import platformdirs

    base = os.environ.get(ENV_DATA_DIR)
    root = Path(base) if base else platformdirs.user_data_path("deid-workbench")
    return root / "secrets" / f"project-{int(project_id)}.secret"


def normalise(value: str) -> str:
    """Case- and space-folded form: "JOHN  smith" and "John Smith" are one original."""
    return " ".join(value.casefold().split())


def _hmac(secret: bytes, *parts: str) -> str:
    message = "\x00".join(("deid-workbench/surrogate",) + parts).encode("utf-8")
    return hmac.new(secret, message, hashlib.sha256).hexdigest()


def scope_id(secret: bytes, patient_key: str | None) -> str:
    """Opaque id of a consistency scope; the patient key itself is never stored."""
    if patient_key is None:
        return CORPUS_SCOPE
    return "p:" + _hmac(secret, "patient", patient_key)[:32]


def mapping_key(secret: bytes, scope: str, kind: str, value: str) -> str:
    return _hmac(secret, "value", scope, kind, normalise(value))


def secret_fingerprint(secret: bytes) -> str:
    """Names which secret was used (in manifests) without revealing it."""
    return hmac.new(secret, b"deid-workbench/fingerprint", hashlib.sha256).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class MappingEntry:
    key: str  # HMAC of (scope, kind, normalised original)
    scope: str  # scope_id(): "corpus" or an HMAC of the patient key
    kind: str  # surrogate kind, e.g. "name", "date", "phone"
    label: str
    surrogate: str


@runtime_checkable
class SurrogateMapping(Protocol):
    def record(self, entries: Iterable[MappingEntry]) -> None: ...

    def get(self, key: str) -> MappingEntry | None: ...

    def entries(self) -> Iterator[MappingEntry]: ...

    def collisions(self) -> list[tuple[str, str, str]]:
        """``(scope, kind, surrogate)`` drawn by more than one original."""
        ...


class InMemorySurrogateMapping:
    """A dict-backed mapping for the CLI and tests; not thread-safe across processes."""

    def __init__(self) -> None:
        self._by_key: dict[str, MappingEntry] = {}
        self._by_surrogate: dict[tuple[str, str, str], set[str]] = {}

    def __len__(self) -> int:
        return len(self._by_key)

    def record(self, entries: Iterable[MappingEntry]) -> None:
        for entry in entries:
            old = self._by_key.get(entry.key)
            if old is not None:
                # Surrogates copy the original's case and spacing, so one key
                # ("smith") may be written "Cole" and "COLE": compare folded.
                if normalise(old.surrogate) != normalise(entry.surrogate):
                    raise MappingConflict(
                        f"mapping key {entry.key[:12]}... ({entry.kind}) already maps to another"
                        " surrogate: was the project secret or the Faker version changed?"
                    )
                continue
            self._by_key[entry.key] = entry
            ident = (entry.scope, entry.kind, normalise(entry.surrogate))
            self._by_surrogate.setdefault(ident, set()).add(entry.key)

    def get(self, key: str) -> MappingEntry | None:
        return self._by_key.get(key)

    def entries(self) -> Iterator[MappingEntry]:
        return iter(sorted(self._by_key.values(), key=lambda e: (e.scope, e.kind, e.key)))

    def collisions(self) -> list[tuple[str, str, str]]:
        return sorted(k for k, keys in self._by_surrogate.items() if len(keys) > 1)


def export_mapping(
    mapping: SurrogateMapping, path: str | os.PathLike[str], *, role: str
) -> int:
    """Write the mapping as JSONL (atomically). Only an ``admin`` may do this.

    The file holds keys and surrogates only; it still deserves care, because a
    secret holder can test a guessed original against it.
    """
    if role != "admin":
        raise PermissionDenied("only an admin may export the surrogate mapping")
    count = 0

    def write(fh: object) -> None:
        nonlocal count
        for entry in mapping.entries():
            fh.write(json.dumps(asdict(entry), ensure_ascii=False) + "\n")  # type: ignore[attr-defined]
            count += 1

    atomic_write_text(path, write)
    return count


#: Prefixes of pseudonymous ids, by what they replace.
PSEUDONYM_PREFIXES = {"document": "doc", "patient": "pt", "source": "src"}


def pseudonym(secret: bytes, namespace: str, value: str) -> str:
    """A stable pseudonymous id for a document id, patient key or source path.

    An HMAC-SHA256 under the project secret, so the same original gives the same
    pseudonym in every export of the project (notes added later line up), while
    without the secret nothing links it back. ``namespace`` is ``document``,
    ``patient`` or ``source``.
    """
    prefix = PSEUDONYM_PREFIXES[namespace]
    return f"{prefix}-{_hmac(secret, 'pseudonym', namespace, str(value))[:20]}"
