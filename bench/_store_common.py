"""Shared set-up for the store benchmarks: databases to test on and notes to import."""

from __future__ import annotations

import os
import random
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import create_engine, text

DEFAULT_PG = "postgresql+psycopg://postgres@127.0.0.1:5432/test"


def notes(n: int, seed: int = 0) -> tuple[list, str]:
    """``n`` notes with gold spans: the project's synthetic generator when present, else simple ones."""
    try:
        from deid_core.synthetic import generate_notes

        return generate_notes(n, seed=seed), "deid_core.synthetic.generate_notes"
    except ImportError:
        pass
    from deid_core.spans import Document, Span

    rng = random.Random(seed)
    first = ["Alex", "Maria", "John", "Wei", "Fatima", "Olga", "Pedro", "Aisha"]
    last = ["Moss", "Garcia", "Smith", "Chen", "Khan", "Ivanova", "Lopez", "Bello"]
    out = []
    for i in range(n):
        name = f"{rng.choice(first)} {rng.choice(last)}"
        date = f"20{rng.randint(60, 99)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
        head = f"Patient {name} (MRN {100000 + i}) seen on {date}.\n"
        body = " ".join(rng.choice(["stable", "afebrile", "BP 120/80", "no distress", "plan:",
                                    "follow up", "labs pending", "continue meds"])
                        for _ in range(rng.randint(150, 400)))
        t = head + body
        spans = (Span(8, 8 + len(name), "PATIENT"),
                 Span(t.index("MRN ") + 4, t.index("MRN ") + 10, "MEDICALRECORD"),
                 Span(t.index(date), t.index(date) + len(date), "DATE"))
        out.append(Document(f"note-{i:06d}", t, spans, {"patient_id": f"P{i // 3}"}))
    return out, "bench/_store_common.notes"


def postgres_base() -> str:
    return os.environ.get("DEID_BENCH_POSTGRES_URL") or os.environ.get(
        "DEID_TEST_POSTGRES_URL", DEFAULT_PG)


@contextmanager
def postgres_schema() -> Iterator[str]:
    """A throw-away schema; yields a URL whose search_path points at it."""
    base = postgres_base()
    schema = f"bench_{uuid.uuid4().hex[:12]}"
    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    try:
        sep = "&" if "?" in base else "?"
        yield f"{base}{sep}options=-csearch_path%3D{schema}"
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()
