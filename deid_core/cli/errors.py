"""The one error boundary for the CLI and the app: every exception becomes a safe message.

A library error (``DeidError``) already names the file, line, document id and
offset and never quotes note text, so its message is shown with its code. Any
other exception is shown by class and location only: its text may hold note
text (a ``UnicodeEncodeError`` quotes the string, SQLAlchemy lists the SQL
parameters, a ``KeyError`` repeats the key). Database errors are translated to
coded ``DatabaseError``s first. Nothing here prints ``str()`` of a foreign
exception.
"""

from __future__ import annotations

import logging
import os
import traceback
from dataclasses import dataclass
from typing import TextIO

from deid_core.errors import DeidError

log = logging.getLogger("deid_core.errors")

#: Exit codes: 1 = refused input or action (a DeidError), 2 = usage, 3 = internal fault, 130 = interrupted.
EXIT_REFUSED = 1
EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130


@dataclass(frozen=True, slots=True)
class SafeError:
    code: str
    kind: str
    message: str
    exit_code: int

    def line(self) -> str:
        return f"error: [{self.code}] {self.kind}: {self.message}"


def _where(exc: BaseException) -> str:
    """The innermost frame of our own code (file and line), else the innermost frame."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if f"{os.sep}deid_core{os.sep}" in f.filename]
    frame = (ours or frames or [None])[-1]
    if frame is None:
        return "unknown location"
    return f"{os.path.basename(frame.filename)}:{frame.lineno} in {frame.name}"


def _foreign(exc: BaseException) -> str:
    """Safe details of a non-library exception: attributes that are numbers or paths, not text."""
    parts: list[str] = []
    if isinstance(exc, UnicodeError):
        start = getattr(exc, "start", None)
        if isinstance(start, int):
            parts.append(f"offset {start}")
        encoding = getattr(exc, "encoding", None)
        if isinstance(encoding, str):
            parts.append(f"encoding {encoding}")
    if isinstance(exc, OSError):
        if exc.filename:
            parts.append(f"file {exc.filename}")
        if exc.strerror:
            parts.append(str(exc.strerror))
    if isinstance(exc, RecursionError):
        parts.append("input nested too deeply")
    if isinstance(exc, MemoryError):
        parts.append("out of memory")
    return ", ".join(parts)


def describe(exc: BaseException) -> SafeError:
    """The message to show for ``exc``: code, class, and only fields known to be safe."""
    if isinstance(exc, KeyboardInterrupt):
        return SafeError("E_INTERRUPTED", "KeyboardInterrupt", "interrupted", EXIT_INTERRUPTED)
    if not isinstance(exc, DeidError):
        try:
            from deid_core.store.dberrors import translate
        except ImportError:  # pragma: no cover - the store's dependencies are always installed
            translate = None  # type: ignore[assignment]
        translated = translate(exc) if translate is not None else None
        if translated is not None:
            exc = translated
    if isinstance(exc, DeidError):
        return SafeError(getattr(exc, "code", "E_DEID"), type(exc).__name__, str(exc),
                         EXIT_REFUSED)
    details = _foreign(exc)
    where = _where(exc)
    message = f"internal error at {where}" + (f" ({details})" if details else "")
    return SafeError("E_INTERNAL", type(exc).__name__, message, EXIT_INTERNAL)


def frames_text(exc: BaseException) -> str:
    """The traceback's file/line/function list, without any exception message or source line."""
    return "".join(
        f"  {f.filename}:{f.lineno} in {f.name}\n" for f in traceback.extract_tb(exc.__traceback__)
    )


def report(exc: BaseException, *, verbose: bool = False, stream: TextIO | None = None) -> SafeError:
    """Write the safe line to ``stream`` (the CLI's stderr) or the log (the app).

    When verbose, the traceback's frames follow, with every message withheld.
    """
    safe = describe(exc)
    text = safe.line() + (f"\ntraceback (messages withheld):\n{frames_text(exc)}" if verbose else "")
    if stream is not None:
        print(text, file=stream)
    else:
        log.error("%s", text)
    return safe
