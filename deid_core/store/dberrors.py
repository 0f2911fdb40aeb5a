"""Database refusals turned into coded ``DatabaseError``s that never quote values.

SQLAlchemy's exception text ends with ``[parameters: ...]``: the note text,
names and dates of birth of the rows being written. Neither it nor the
driver's message is shown. The translation keeps what helps a user act: the
kind of refusal, the constraint or table it came from (names from the
schema, not from the data), and a stable code.
"""

from __future__ import annotations

import re

from sqlalchemy import exc as sa_exc

from deid_core.errors import DatabaseError

#: SQLite's constraint messages name columns only ("UNIQUE constraint failed: documents.sha256").
_SQLITE_CONSTRAINT = re.compile(r"^(UNIQUE|CHECK|NOT NULL|FOREIGN KEY) constraint failed(?::\s*([\w., ]+))?")
_STATEMENT_TABLE = re.compile(r"^\s*(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM|COPY)\s+\"?(\w+)", re.I)
_PG_CODES = {
    "23505": ("E_DB_UNIQUE", "a row with the same key already exists"),
    "23503": ("E_DB_FOREIGN_KEY", "a referenced row does not exist"),
    "23502": ("E_DB_NOT_NULL", "a required value is missing"),
    "23514": ("E_DB_CHECK", "a value breaks a check constraint"),
    "22001": ("E_DB_TOO_LONG", "a value is longer than its column allows"),
    "40001": ("E_DB_CONFLICT", "a concurrent transaction conflicted; nothing was written"),
    "40P01": ("E_DB_CONFLICT", "a deadlock with another transaction; nothing was written"),
}
_SQLITE_KINDS = {
    "UNIQUE": ("E_DB_UNIQUE", "a row with the same key already exists"),
    "CHECK": ("E_DB_CHECK", "a value breaks a check constraint"),
    "NOT NULL": ("E_DB_NOT_NULL", "a required value is missing"),
    "FOREIGN KEY": ("E_DB_FOREIGN_KEY", "a referenced row does not exist"),
}
_HINTS = {
    "E_DB_UNIQUE": " (another import or session may have written the same note at the same"
                   " time; nothing from this transaction was stored, run it again)",
    "E_DB_LOCKED": " (another process held the write lock too long; try again)",
}


def _table(exc: sa_exc.StatementError) -> str | None:
    m = _STATEMENT_TABLE.match(exc.statement or "")
    return m.group(1) if m else None


def translate(exc: BaseException) -> DatabaseError | None:
    """A ``DatabaseError`` for an SQLAlchemy or driver error; ``None`` if ``exc`` is neither."""
    if not isinstance(exc, sa_exc.SQLAlchemyError):
        return None
    orig = getattr(exc, "orig", None)
    code, what, where = "E_DB", f"database error ({type(orig or exc).__name__})", None
    if isinstance(exc, sa_exc.StatementError):
        table = _table(exc)
        where = f"table {table}" if table else None
    sqlstate = getattr(orig, "sqlstate", None)
    driver_message = str(orig) if orig is not None else ""
    if sqlstate in _PG_CODES:
        code, what = _PG_CODES[sqlstate]
        diag = getattr(orig, "diag", None)
        constraint = getattr(diag, "constraint_name", None)
        if constraint:
            where = f"constraint {constraint}"
    elif type(orig).__module__.startswith("sqlite3"):
        m = _SQLITE_CONSTRAINT.match(driver_message)
        if m:
            code, what = _SQLITE_KINDS[m.group(1)]
            if m.group(2):
                where = f"columns {m.group(2).strip()}"
        elif driver_message.startswith("database is locked"):
            code, what = "E_DB_LOCKED", "the database is locked"
    elif orig is not None and "NUL (0x00)" in driver_message:
        # psycopg refuses NUL client-side; its message names no value.
        code, what = "E_DB_NUL", "a text contains a NUL character, which PostgreSQL cannot store"
    elif isinstance(exc, sa_exc.OperationalError):
        code, what = "E_DB_UNAVAILABLE", (
            f"cannot reach or use the database ({type(orig or exc).__name__})"
        )
    message = what + (f" [{where}]" if where else "") + _HINTS.get(code, "")
    return DatabaseError(message, code=code)
