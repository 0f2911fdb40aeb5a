"""Typed errors that say where the problem is without quoting note text.

Every message names a file, line, document id, offset or label so that a user
can find the problem, but never includes the note's characters: exceptions end
up in logs and tracebacks, and logs must not carry PHI.
"""

from __future__ import annotations


class DeidError(Exception):
    """Base class for every error the library raises on purpose.

    ``code`` is a stable identifier (``E_EMPTY``, ``E_FORBIDDEN``, ...) that
    scripts and tests can rely on; the CLI prints it and the app shows it.
    A subclass sets a default; ``with_code`` sets one on an instance.
    """

    code: str = "E_DEID"

    def with_code(self, code: str) -> DeidError:
        self.code = code
        return self


class InvalidSpan(DeidError, ValueError):
    """A span whose offsets are impossible or do not fit its document."""

    code = "E_SPAN"


class OverlappingSpans(InvalidSpan):
    """Two spans of one layer cover the same characters."""


class CorpusFormatError(DeidError, ValueError):
    """A corpus file that cannot be read as a whole.

    ``path``, ``line`` and ``span_index`` are kept as attributes so that the UI
    can point at the exact place.
    """

    code = "E_FORMAT"

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        line: int | None = None,
        doc_id: str | None = None,
        span_index: int | None = None,
        offset: int | None = None,
    ) -> None:
        self.reason = message
        self.path = path
        self.line = line
        self.doc_id = doc_id
        self.span_index = span_index
        self.offset = offset
        where = []
        if path is not None:
            where.append(str(path))
        if line is not None:
            where.append(f"line {line}")
        if doc_id is not None:
            where.append(f"document {doc_id!r}")
        if span_index is not None:
            where.append(f"span {span_index}")
        if offset is not None:
            where.append(f"offset {offset}")
        prefix = ", ".join(where)
        super().__init__(f"{prefix}: {message}" if prefix else message)


class UnsupportedFormat(DeidError, ValueError):
    """A file format, label scheme or language the library does not handle."""

    code = "E_UNSUPPORTED"


class MisalignedSpan(DeidError, ValueError):
    """A span whose edges fall inside a token, so BIO tags cannot express it."""

    code = "E_MISALIGNED"


class ModelError(DeidError):
    """A model directory that is missing, incomplete or of an unknown version."""

    code = "E_MODEL"


class RuleError(UnsupportedFormat):
    """A rule or post-processing filter that cannot be built.

    The message names the rule (or filter) and the file it came from, never
    any note text, so that a bad YAML entry is easy to find.
    """

    code = "E_RULE"

    def __init__(self, message: str, *, rule: str | None = None, path: str | None = None) -> None:
        self.rule = rule
        self.path = path
        where = []
        if path is not None:
            where.append(str(path))
        if rule is not None:
            where.append(f"rule {rule!r}")
        prefix = ", ".join(where)
        super().__init__(f"{prefix}: {message}" if prefix else message)


class DocumentMismatch(DeidError, ValueError):
    """Gold and predicted corpora that cannot be compared document by document.

    Raised for a prediction without a gold document, a duplicate id, or a
    prediction whose text differs from its gold; the message names the id and
    an offset, never the text.
    """

    code = "E_MISMATCH"


class StoreError(DeidError):
    """The annotation store refused an operation (bad state, unknown name, wrong role)."""

    code = "E_STORE"


class NotFound(StoreError, LookupError):
    """A project, document, user or model version that the store does not hold."""

    code = "E_NOT_FOUND"


class AlreadyExists(StoreError):
    """A name that must be unique (project, user, model version) is already taken."""

    code = "E_EXISTS"


class MappingConflict(DeidError):
    """One surrogate-mapping key recorded with two surrogates: the secret or generator changed."""

    code = "E_MAPPING"


class PermissionDenied(DeidError, PermissionError):
    """An action the acting user may not take: wrong role, inactive or unknown account."""

    code = "E_FORBIDDEN"


class LeakDetected(DeidError):
    """An export whose output still contains original PHI strings; the report names
    documents, offsets and labels, never the strings."""

    code = "E_LEAK"
    #: The leak report (``protect.leakcheck.LeakReport``) and, for notes from the
    #: store, their ids there (to open them in Review); set by the export.
    report: object = None
    review_ids: dict[str, int] = {}  # noqa: RUF012 - replaced per instance, never mutated


class ExportRefused(DeidError):
    """An export that would go beyond its confirmed scope (unreviewed documents without
    confirmation) or overwrite an existing export; nothing is written."""

    code = "E_EXPORT_REFUSED"


class EmptyInput(DeidError, ValueError):
    """A corpus with no notes where none makes no sense (import, evaluate, bias sweep, train)."""

    code = "E_EMPTY"

    def __init__(self, message: str, *, path: str | None = None) -> None:
        self.path = path
        super().__init__(f"{path}: {message}" if path else message)


class DatabaseError(StoreError):
    """A database refusal translated into words: the constraint or column, never the values.

    SQLAlchemy's own message carries the statement's parameters (note text,
    names, dates of birth), so it is never shown; this error replaces it.
    """

    code = "E_DB"

    def __init__(self, message: str, *, code: str = "E_DB") -> None:
        self.code = code
        super().__init__(message)


class TooManyAttempts(DeidError):
    """Sign-in refused without checking the password: too many recent failures."""

    code = "E_THROTTLED"

    def __init__(self, message: str, *, retry_after: float) -> None:
        self.retry_after = retry_after
        super().__init__(message)


class ResumeMismatch(DeidError):
    """A resumed batch run whose parameters differ from the partitions already written."""

    code = "E_RESUME_MISMATCH"
