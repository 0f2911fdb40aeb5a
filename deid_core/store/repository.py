"""The store's API: plain functions over an ``Engine`` that return the project's own types.

Pages, the CLI, active learning and export call these; ORM objects never leave
this module (each function opens and closes its own transaction). Documents
come back as ``deid_core.spans.Document`` with ``Span``s; everything else is a
small frozen dataclass defined here.

Saving a review is optimistic: the caller passes the document version it
opened, and the save is a compare-and-set (``UPDATE ... WHERE version =
:base``) in the same transaction as the new annotation rows. A stale save
becomes a ``ReviewConflict`` ("changed by X at T") and the reviewer's spans are
stored as a draft, so no one's work is lost or silently overwritten.
"""

from __future__ import annotations

import hashlib
import heapq
import math
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from itertools import islice
from typing import Any

from sqlalchemy import delete, func, insert, or_, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from deid_core.confidence import logprob_per_span
from deid_core.engine.propagate import known_phi_items
from deid_core.errors import (
    AlreadyExists,
    CorpusFormatError,
    EmptyInput,
    InvalidSpan,
    NotFound,
    StoreError,
)
from deid_core.schemes import load_scheme
from deid_core.spans import Document, Span, check_no_overlap, sort_spans
from deid_core.store.audit import record_event
from deid_core.store.authz import SYSTEM, Actor, check
from deid_core.store.engine import is_sqlite, read_session, refresh_statistics, write_session
from deid_core.store.models import (
    STATUSES,
    Annotation,
    DocumentRow,
    ImportBatch,
    ModelVersion,
    PredictionRow,
    Project,
    QueueScore,
    Review,
    ReviewDraft,
    utcnow,
)
from deid_core.store.owner import owner_tag

Progress = Callable[[str, float], None]
LANGS = ("en", "es")
ANNOTATION_MODES = ("none", "gold", "predictions")
UNREVIEWED = ("new", "in_review")
#: Bulk changes at least this large refresh the planner statistics afterwards.
ANALYZE_AFTER_ROWS = 1000

# ----------------------------------------------------------------- result types


@dataclass(frozen=True, slots=True)
class ProjectInfo:
    id: int
    name: str
    lang: str
    scheme: str
    settings: dict[str, Any]
    created_at: datetime


@dataclass(frozen=True, slots=True)
class DuplicateNote:
    """A note skipped at import because the project already holds the same text."""

    external_id: str
    existing_external_id: str


@dataclass(frozen=True, slots=True)
class ImportResult:
    batch_id: int
    n_imported: int
    n_spans: int
    duplicates: tuple[DuplicateNote, ...]

    @property
    def n_duplicates(self) -> int:
        return len(self.duplicates)


@dataclass(frozen=True, slots=True)
class QueueRow:
    doc_id: int
    external_id: str
    patient_id: str | None
    status: str
    assigned_to: str | None
    version: int
    n_chars: int
    logprob: float | None
    logprob_norm: float | None
    score: float | None
    updated_at: datetime
    updated_by: str | None
    logprob_span: float | None = None  # the default order: log P per predicted span


@dataclass(frozen=True, slots=True)
class PredictionLayer:
    id: int
    model_version: str
    model_version_id: int | None
    spans: tuple[Span, ...]
    logprob: float | None
    logprob_norm: float | None
    n_tokens: int | None
    bias: float
    created_at: datetime


@dataclass(frozen=True, slots=True)
class AnnotationRecord:
    """One row of a reviewed layer, including rejected predictions (not in ``Document.spans``)."""

    span: Span
    decision: str
    author: str
    created_at: datetime
    updated_at: datetime
    predicted: Span | None


@dataclass(frozen=True, slots=True)
class DocumentLayers:
    """A note with its latest prediction and its current reviewed layer.

    ``document.spans`` is the reviewed layer (rejections excluded); ``version``
    is what the reviewer passes back to ``save_review`` as ``base_version``.
    """

    doc_id: int
    project_id: int
    document: Document
    status: str
    version: int
    assigned_to: str | None
    updated_at: datetime
    updated_by: str | None
    prediction: PredictionLayer | None
    annotations: tuple[AnnotationRecord, ...]


@dataclass(frozen=True, slots=True)
class ReviewSaved:
    doc_id: int
    version: int
    review_id: int
    decisions: dict[str, int]
    ok: bool = True


@dataclass(frozen=True, slots=True)
class ReviewConflict:
    """Someone saved the document after the reviewer opened it; their spans became a draft."""

    doc_id: int
    base_version: int
    current_version: int
    changed_by: str | None
    changed_at: datetime
    draft_id: int
    spans: tuple[Span, ...]
    ok: bool = False

    @property
    def message(self) -> str:
        who = self.changed_by or "another session"
        return (
            f"document changed by {who} at {self.changed_at:%Y-%m-%d %H:%M:%S %Z} (version"
            f" {self.current_version}, you opened {self.base_version}); your edits were kept as"
            f" draft {self.draft_id}"
        )


@dataclass(frozen=True, slots=True)
class Draft:
    id: int
    doc_id: int
    author: str
    base_version: int
    conflict_version: int
    spans: tuple[Span, ...]
    created_at: datetime
    resolved_at: datetime | None
    reason: str = "conflict"  # "conflict" (a save lost a race) | "autosave" (work in progress)


@dataclass(frozen=True, slots=True)
class ModelVersionInfo:
    id: int
    project: str
    version: str
    created_at: datetime
    n_train_docs: int
    hyperparams: dict[str, Any]
    metrics: dict[str, Any]
    artifact_path: str
    active: bool
    parent_version: str | None


@dataclass(frozen=True, slots=True)
class PredictionInput:
    """One prediction to record (the shape ``predict-queue`` and active learning produce)."""

    doc_id: int
    spans: tuple[Span, ...]
    model_version: str
    logprob: float | None = None
    logprob_norm: float | None = None
    n_tokens: int | None = None
    bias: float = 0.0
    model_version_id: int | None = None
    meta: dict[str, Any] = field(default_factory=dict)


# ----------------------------------------------------------------- helpers


def _aware(dt: datetime | None) -> datetime | None:
    # SQLite hands back naive datetimes; every value we store is UTC.
    if dt is not None and dt.tzinfo is None:
        return dt.replace(tzinfo=timezone.utc)
    return dt


def _now(dt: datetime | None) -> datetime:
    out = _aware(dt)
    assert out is not None
    return out


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def spans_to_json(spans: Iterable[Span]) -> list[dict[str, Any]]:
    return [
        {"start": s.start, "end": s.end, "label": s.label, "source": s.source,
         "score": round(float(s.score), 6)}
        for s in sort_spans(spans)
    ]


def spans_from_json(raw: Iterable[Mapping[str, Any]]) -> tuple[Span, ...]:
    return tuple(
        Span(int(r["start"]), int(r["end"]), str(r["label"]), str(r.get("source", "gold")),
             float(r.get("score", 1.0)))
        for r in raw
    )


def _offsets(spans: Iterable[Span]) -> list[list[Any]]:
    return [[s.start, s.end, s.label] for s in sort_spans(spans)]


def _project(s: Session, name: str) -> Project:
    p = s.scalar(select(Project).where(Project.name == name))
    if p is None:
        raise NotFound(f"no project {name!r}")
    return p


def _project_info(p: Project) -> ProjectInfo:
    return ProjectInfo(p.id, p.name, p.lang, p.scheme, dict(p.settings or {}), _now(p.created_at))


def _document(s: Session, doc_id: int, *, lock: bool = False) -> DocumentRow:
    q = select(DocumentRow).where(DocumentRow.id == doc_id)
    if lock:
        q = q.with_for_update()
    row = s.scalar(q)
    if row is None:
        raise NotFound(f"no document with id {doc_id}")
    return row


#: Column widths the library checks before writing, so no database refuses a row mid-batch.
MAX_EXTERNAL_ID = 500


def check_import_doc(doc: Document, allowed_labels: frozenset[str] | None) -> None:
    """Refuse what a database would refuse (or store wrongly) with a message naming the place.

    NUL characters (PostgreSQL cannot store them), lone surrogates (not
    encodable as UTF-8), over-long ids, non-finite numbers in scores or meta
    (PostgreSQL JSON rejects NaN; SQLite stores it), and gold labels outside
    the project's scheme.
    """
    where = {"doc_id": doc.id[:80]}
    # Identifiers from the record (issue 14) are stored with the note, like its text; a
    # malformed list stops the batch here, naming the note and item, never the value.
    known_phi_items(doc.meta, doc_id=doc.id[:80])
    if len(doc.id) > MAX_EXTERNAL_ID:
        # Not quoted at all: an id this long is usually note text in the wrong column.
        raise CorpusFormatError(
            f"a document id is {len(doc.id)} characters, more than the {MAX_EXTERNAL_ID} allowed"
        ).with_code("E_TOO_LONG")
    for name, value in (("document id", doc.id), ("text", doc.text)):
        nul = value.find("\x00")
        if nul >= 0:
            raise CorpusFormatError(f"{name} contains a NUL character", offset=nul,
                                    **where).with_code("E_NUL")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise CorpusFormatError(f"{name} contains a lone surrogate (not valid Unicode)",
                                    offset=exc.start, **where).with_code("E_UNICODE") from None
    for i, sp in enumerate(doc.spans):
        if not math.isfinite(sp.score):
            raise CorpusFormatError("span score is not a finite number", span_index=i,
                                    offset=sp.start, **where).with_code("E_NAN")
        if allowed_labels is not None and sp.label not in allowed_labels:
            raise CorpusFormatError(
                f"label {sp.label[:40]!r} is not in the project's scheme; allowed:"
                f" {', '.join(sorted(allowed_labels))}", span_index=i, offset=sp.start, **where,
            ).with_code("E_LABEL")
    bad = _non_finite(doc.meta)
    if bad is not None:
        raise CorpusFormatError(f"meta field {bad!r} is not a finite number",
                                **where).with_code("E_NAN")


def _non_finite(value: Any, path: str = "meta") -> str | None:
    """The path of the first NaN or infinity in a JSON-like value (bounded depth by the reader)."""
    if isinstance(value, float):
        return None if math.isfinite(value) else path
    if isinstance(value, Mapping):
        for k, v in value.items():
            hit = _non_finite(v, f"{path}.{k}"[:80])
            if hit:
                return hit
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            hit = _non_finite(v, f"{path}[{i}]"[:80])
            if hit:
                return hit
    return None


def _finite_or_none(value: float | None, what: str, doc_id: int) -> float | None:
    if value is not None and not math.isfinite(float(value)):
        raise StoreError(f"document {doc_id}: {what} is not a finite number").with_code("E_NAN")
    return value


def _check_layer(spans: Sequence[Span], n_chars: int, doc_id: int) -> None:
    where = f"document {doc_id}"
    seen: set[tuple[int, int, str]] = set()
    for span in spans:
        span.check_fits(n_chars, doc_id=where)
        _finite_or_none(span.score, f"span {span.start}..{span.end} score", doc_id)
        if span.key in seen:
            raise InvalidSpan(f"{where}: duplicate span {span.start}..{span.end} ({span.label})")
        seen.add(span.key)
    check_no_overlap(spans, doc_id=where)


# ----------------------------------------------------------------- projects


def create_project(
    engine: Engine, name: str, *, lang: str = "en", scheme: str = "i2b2_2014",
    settings: Mapping[str, Any] | None = None, actor: Actor = SYSTEM,
) -> ProjectInfo:
    if not name or len(name) > 200:
        raise StoreError("a project name must be 1-200 characters")
    if lang not in LANGS:
        raise StoreError(f"unsupported language {lang!r}: use one of {', '.join(LANGS)}")
    load_scheme(scheme)  # fail now on a typo, not at first review
    defaults: dict[str, Any] = {"bias": 0.0, "retrain_every": 20}
    defaults.update(settings or {})
    with write_session(engine) as s:
        actor = check(s, actor, "admin", "create a project")
        if s.scalar(select(Project.id).where(Project.name == name)) is not None:
            raise AlreadyExists(f"project {name!r} already exists")
        p = Project(name=name, lang=lang, scheme=scheme, settings=defaults, created_by=actor)
        s.add(p)
        s.flush()
        record_event(s, actor, "project.create", "project", p.id, project_id=p.id,
                     after={"name": name, "lang": lang, "scheme": scheme, "settings": defaults})
        return _project_info(p)


def get_project(engine: Engine, name: str) -> ProjectInfo:
    with read_session(engine) as s:
        return _project_info(_project(s, name))


def list_projects(engine: Engine) -> list[ProjectInfo]:
    with read_session(engine) as s:
        return [_project_info(p) for p in s.scalars(select(Project).order_by(Project.name))]


def update_project_settings(
    engine: Engine, name: str, updates: Mapping[str, Any], *, actor: Actor = SYSTEM
) -> ProjectInfo:
    """Merge ``updates`` into the settings (O-label bias, retraining policy, ...)."""
    with write_session(engine) as s:
        actor = check(s, actor, "admin", "change project settings")
        p = _project(s, name)
        before = dict(p.settings or {})
        after = {**before, **updates}
        p.settings = after
        record_event(s, actor, "project.settings", "project", p.id, project_id=p.id,
                     before=before, after=after)
        return _project_info(p)


# ----------------------------------------------------------------- import


def import_documents(
    engine: Engine,
    project: str,
    docs: Iterable[Document],
    *,
    annotations: str = "none",
    fmt: str = "jsonl",
    source: str = "",
    actor: Actor = SYSTEM,
    progress: Progress | None = None,
    total: int | None = None,
    chunk_size: int = 1000,
) -> ImportResult:
    """Store a batch all or nothing: any error (including a reader's) leaves nothing visible.

    ``annotations``: ``"gold"`` makes the documents' spans the reviewed layer
    (status reviewed), ``"predictions"`` stores them as a prediction
    (``model_version="import"``; ``meta.logprob`` is kept when present),
    ``"none"`` drops them. A note whose sha256 is already in the project (or
    earlier in the batch) is skipped and reported; an id reused for a
    different text is an error.

    PostgreSQL: one transaction. SQLite has one writer at a time, so one
    transaction would hold the write lock for the whole import and reviewers'
    saves would time out; there the batch is marked ``importing`` (its notes
    hidden from every listing), each chunk is committed in its own short
    write transaction, the batch becomes ``complete`` at the end, and an error
    deletes what the batch had written.
    """
    if annotations not in ANNOTATION_MODES:
        raise StoreError(f"annotations must be one of {', '.join(ANNOTATION_MODES)}")
    chunked = is_sqlite(engine)
    with write_session(engine) as s:
        who = check(s, actor, "admin", "import notes")
        proj = _project(s, project)
        batch = ImportBatch(project_id=proj.id, format=fmt, annotations=annotations,
                            source=source[:2000], created_by=who,
                            status="importing" if chunked else "complete",
                            owner=owner_tag() if chunked else None)
        s.add(batch)
        s.flush()
        state = _ImportState(proj.id, batch.id, annotations, who,
                             frozenset(load_scheme(proj.scheme).names) if annotations == "gold"
                             else None)
        if not chunked:
            _import_all(s, state, docs, chunk_size, progress, total, source=source)
            _finish_import(s, state, fmt, source)
    if chunked:
        try:
            _import_all(None, state, docs, chunk_size, progress, total, engine=engine,
                        actor=actor, source=source)
            with write_session(engine) as s:
                _finish_import(s, state, fmt, source)
        except BaseException:
            discard_import_batch(engine, state.batch_id, actor=actor)
            raise
    if state.n_imported >= ANALYZE_AFTER_ROWS:
        refresh_statistics(engine, ("documents", "predictions", "annotations"))
    if progress is not None:
        progress(f"imported {state.n_imported} notes, {len(state.duplicates)} duplicates", 1.0)
    return ImportResult(state.batch_id, state.n_imported, state.n_spans, tuple(state.duplicates))


@dataclass
class _ImportState:
    project_id: int
    batch_id: int
    annotations: str
    actor: str
    allowed: frozenset[str] | None
    batch_sha: dict[str, str] = field(default_factory=dict)
    batch_ids: set[str] = field(default_factory=set)
    duplicates: list[DuplicateNote] = field(default_factory=list)
    n_seen: int = 0
    n_imported: int = 0
    n_spans: int = 0


def _import_all(
    s: Session | None, state: _ImportState, docs: Iterable[Document], chunk_size: int,
    progress: Progress | None, total: int | None, *, engine: Engine | None = None,
    actor: Actor = SYSTEM, source: str = "",
) -> None:
    """Read, check and insert chunk by chunk: in ``s``, or (``s`` None) one short write
    transaction per chunk on ``engine``, with reading and hashing outside it."""
    it = iter(docs)
    while True:
        chunk = list(islice(it, chunk_size))
        if not chunk:
            break
        state.n_seen += len(chunk)
        for d in chunk:
            check_import_doc(d, state.allowed)
        hashes = [sha256_text(d.text) for d in chunk]
        if s is not None:
            _import_chunk(s, state, chunk, hashes)
        else:
            assert engine is not None
            with write_session(engine) as cs:
                check(cs, actor, "admin", "import notes")  # a demotion stops a running import
                _import_chunk(cs, state, chunk, hashes)
        if progress is not None:
            frac = min(state.n_seen / total, 1.0) if total else 0.0
            progress(f"imported {state.n_imported} notes, {len(state.duplicates)} duplicates",
                     frac)
    if state.n_seen == 0:
        # An empty batch row would read as a successful import of nothing.
        raise EmptyInput(f"nothing to import: no notes in {source or 'the input'}",
                         path=source or None)


def _import_chunk(s: Session, state: _ImportState, chunk: list[Document], hashes: list[str]) -> None:
    existing_sha, existing_ids = _existing_keys(s, state.project_id, hashes,
                                                {d.id for d in chunk})
    gold = state.annotations == "gold"
    rows: list[dict[str, Any]] = []
    kept: list[Document] = []
    for doc, digest in zip(chunk, hashes):
        first = existing_sha.get(digest) or state.batch_sha.get(digest)
        if first is not None:
            state.duplicates.append(DuplicateNote(doc.id, first))
            continue
        if doc.id in existing_ids or doc.id in state.batch_ids:
            raise CorpusFormatError(
                "document id is already used in this project for a different text",
                doc_id=doc.id,
            )
        state.batch_sha[digest] = doc.id
        state.batch_ids.add(doc.id)
        meta = dict(doc.meta)
        patient = meta.get("patient_id")
        lp = meta.get("logprob") if state.annotations == "predictions" else None
        lpn = meta.get("logprob_per_token") if state.annotations == "predictions" else None
        rows.append({
            "project_id": state.project_id, "external_id": doc.id,
            "patient_id": None if patient is None else str(patient)[:200],
            "text": doc.text, "sha256": digest, "n_chars": len(doc.text),
            "batch_id": state.batch_id, "meta": meta,
            "status": "reviewed" if gold else "new",
            "version": 1 if gold else 0, "updated_by": state.actor,
            "logprob": lp if isinstance(lp, (int, float)) else None,
            "logprob_norm": lpn if isinstance(lpn, (int, float)) else None,
            "logprob_span": (logprob_per_span(float(lp), len(doc.spans))
                             if isinstance(lp, (int, float)) and math.isfinite(lp) else None),
        })
        kept.append(doc)
    if rows:
        # Core inserts (not ORM bulk): a third of the time on 10,000 notes.
        doc_table = DocumentRow.__table__
        ids = s.connection().execute(
            insert(doc_table).returning(doc_table.c.id, sort_by_parameter_order=True),
            rows,
        ).scalars().all()
        state.n_spans += _store_import_layers(s, kept, ids, rows, state.annotations, state.actor)
        state.n_imported += len(rows)


def _finish_import(s: Session, state: _ImportState, fmt: str, source: str) -> None:
    batch = s.get(ImportBatch, state.batch_id)
    assert batch is not None
    batch.n_documents = state.n_imported
    batch.n_duplicates = len(state.duplicates)
    batch.status, batch.owner = "complete", None
    record_event(s, state.actor, "import", "import_batch", state.batch_id,
                 project_id=state.project_id,
                 after={"format": fmt, "annotations": state.annotations,
                        "n_documents": state.n_imported,
                        "n_duplicates": len(state.duplicates), "n_spans": state.n_spans})


def discard_import_batch(engine: Engine, batch_id: int, *, actor: Actor = SYSTEM) -> bool:
    """Delete an unfinished batch and everything it wrote (its notes were never visible).

    Returns False for a batch that is complete or gone (nothing is deleted).
    """
    with write_session(engine) as s:
        who = check(s, actor, "admin", "discard an unfinished import")
        row = s.execute(select(ImportBatch.status, ImportBatch.project_id)
                        .where(ImportBatch.id == batch_id)).first()
        if row is None or row.status == "complete":
            return False
        record_event(s, who, "import.discarded", "import_batch", batch_id,
                     project_id=row.project_id)
        docs = select(DocumentRow.id).where(DocumentRow.batch_id == batch_id)
        s.execute(delete(Annotation).where(Annotation.document_id.in_(docs)))
        s.execute(delete(PredictionRow).where(PredictionRow.document_id.in_(docs)))
        s.execute(delete(DocumentRow).where(DocumentRow.batch_id == batch_id))
        s.execute(delete(ImportBatch).where(ImportBatch.id == batch_id))
    return True


def unfinished_import_batches(engine: Engine) -> list[tuple[int, str | None, datetime]]:
    """``(batch id, owner, created_at)`` of batches still marked importing."""
    with read_session(engine) as s:
        return [(i, o, _now(c)) for i, o, c in s.execute(
            select(ImportBatch.id, ImportBatch.owner, ImportBatch.created_at)
            .where(ImportBatch.status != "complete").order_by(ImportBatch.id))]


def _visible() -> Any:
    """Notes of unfinished (chunked SQLite) imports are hidden from every listing."""
    unfinished = select(ImportBatch.id).where(ImportBatch.status != "complete")
    return or_(DocumentRow.batch_id.is_(None), DocumentRow.batch_id.not_in(unfinished))


def _existing_keys(
    s: Session, project_id: int, hashes: Sequence[str], ids: set[str]
) -> tuple[dict[str, str], set[str]]:
    """Texts (sha256 -> external id) and ids already in the project, for one import chunk.

    A concurrent import can commit the same note after this read; the unique
    constraints then refuse the insert and the batch rolls back with a coded
    ``E_DB_UNIQUE`` error (see ``dberrors``).
    """
    existing_sha = dict(s.execute(
        select(DocumentRow.sha256, DocumentRow.external_id).where(
            DocumentRow.project_id == project_id, DocumentRow.sha256.in_(set(hashes)))).all())
    existing_ids = set(s.scalars(
        select(DocumentRow.external_id).where(
            DocumentRow.project_id == project_id, DocumentRow.external_id.in_(ids))))
    return existing_sha, existing_ids


def _bulk_insert(s: Session, table: Any, rows: list[dict[str, Any]]) -> None:
    """Insert many plain (non-JSON) rows; PostgreSQL COPY is ~5x faster than multi-row INSERT."""
    if not rows:
        return
    conn = s.connection()
    if conn.dialect.name == "postgresql" and conn.dialect.driver == "psycopg":
        cols = list(rows[0])
        raw = conn.connection.driver_connection
        assert raw is not None
        with raw.cursor() as cur, cur.copy(
            f"COPY {table.name} ({', '.join(cols)}) FROM STDIN"
        ) as copy:
            for r in rows:
                copy.write_row([r[c] for c in cols])
    else:
        conn.execute(insert(table), rows)


def _store_import_layers(
    s: Session, docs: list[Document], ids: Sequence[int], rows: list[dict[str, Any]],
    annotations: str, actor: str,
) -> int:
    if annotations == "none":
        return 0
    n = 0
    now = utcnow()
    if annotations == "gold":
        ann_rows = []
        for doc, doc_id in zip(docs, ids):
            for sp in doc.spans:
                ann_rows.append({
                    "document_id": doc_id, "doc_version": 1, "start_char": sp.start,
                    "end_char": sp.end, "label": sp.label, "source": sp.source,
                    "score": float(sp.score), "author": actor, "decision": "added",
                    "created_at": now, "updated_at": now,
                })
        _bulk_insert(s, Annotation.__table__, ann_rows)
        return len(ann_rows)
    pred_rows = []
    for doc, doc_id, row in zip(docs, ids, rows):
        pred_rows.append({
            "document_id": doc_id, "model_version": str(doc.meta.get("model_version", "import")),
            "spans": spans_to_json(
                Span(sp.start, sp.end, sp.label, "import" if sp.source == "gold" else sp.source,
                     sp.score) for sp in doc.spans),
            "logprob": row["logprob"],
            "logprob_norm": row["logprob_norm"], "bias": float(doc.meta.get("bias", 0.0) or 0.0),
            "created_at": now,
        })
        n += len(doc.spans)
    s.connection().execute(insert(PredictionRow.__table__), pred_rows)
    return n


# ----------------------------------------------------------------- queue


def _queue_row(d: DocumentRow, score: float | None = None) -> QueueRow:
    return QueueRow(d.id, d.external_id, d.patient_id, d.status, d.assigned_to, d.version,
                    d.n_chars, d.logprob, d.logprob_norm, score, _now(d.updated_at), d.updated_by,
                    d.logprob_span)


_QUEUE_COLUMNS = (
    DocumentRow.id, DocumentRow.external_id, DocumentRow.patient_id, DocumentRow.status,
    DocumentRow.assigned_to, DocumentRow.version, DocumentRow.n_chars, DocumentRow.logprob,
    DocumentRow.logprob_norm, DocumentRow.updated_at, DocumentRow.updated_by, DocumentRow.logprob_span,
)
#: Queue orders read from a ``documents`` column (ascending: least confident first), and the
#: column's position in ``_QUEUE_COLUMNS``. ``logprob_span`` is the default (issue 13).
_ORDER_COLUMNS: dict[str, tuple[Any, int]] = {
    "logprob_span": (DocumentRow.logprob_span, 11),
    "logprob": (DocumentRow.logprob, 7),
    "logprob_norm": (DocumentRow.logprob_norm, 8),
}
QUEUE_ORDER_NAMES = (*_ORDER_COLUMNS, "id")
DEFAULT_QUEUE_ORDER = "logprob_span"


def _row_from_tuple(t: Any, score: float | None = None) -> QueueRow:
    return QueueRow(t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8], score, _now(t[9]), t[10],
                    t[11])


def review_queue(
    engine: Engine,
    project: str,
    *,
    order: str = DEFAULT_QUEUE_ORDER,
    statuses: Sequence[str] = UNREVIEWED,
    assigned_to: str | None = None,
    unassigned_only: bool = False,
    limit: int = 50,
    offset: int = 0,
) -> list[QueueRow]:
    """The next documents to review, least confident first.

    ``order``: ``"logprob_span"`` (the default: log-probability divided by 1 +
    the number of predicted spans, ascending; ranks notes by their F1 best, see
    docs/active.md "Queue order"), ``"logprob"`` (document log-probability,
    ascending; Wellner et al. found it tracks record F-measure), ``"logprob_norm"`` (per token,
    ascending, so long notes do not always come first), ``"id"`` (import
    order), or ``"strategy:<name>"`` (scores written by active learning via
    ``set_queue_scores``, highest first; only scored documents are listed).
    Unpredicted documents come after predicted ones. Each status is read
    through its own index range and the ranges are merged here, which keeps
    the query fast at 100,000 documents.
    """
    bad = [st for st in statuses if st not in STATUSES]
    if bad:
        raise StoreError(f"unknown status {bad[0]!r}: use {', '.join(STATUSES)}")
    need = offset + limit
    with read_session(engine) as s:
        proj = _project(s, project)

        def base(status: str) -> Any:
            q = select(*_QUEUE_COLUMNS).where(
                DocumentRow.project_id == proj.id, DocumentRow.status == status, _visible()
            )
            if assigned_to is not None:
                q = q.where(DocumentRow.assigned_to == assigned_to)
            if unassigned_only:
                q = q.where(DocumentRow.assigned_to.is_(None))
            return q

        if order.startswith("strategy:"):
            strategy = order.split(":", 1)[1]
            q = (
                select(*_QUEUE_COLUMNS, QueueScore.score)
                .join(QueueScore, QueueScore.document_id == DocumentRow.id)
                .where(QueueScore.project_id == proj.id, QueueScore.strategy == strategy,
                       DocumentRow.status.in_(list(statuses)), _visible())
                .order_by(QueueScore.score.desc(), DocumentRow.id)
                .offset(offset).limit(limit)
            )
            if assigned_to is not None:
                q = q.where(DocumentRow.assigned_to == assigned_to)
            if unassigned_only:
                q = q.where(DocumentRow.assigned_to.is_(None))
            return [_row_from_tuple(t, t[12]) for t in s.execute(q)]
        if order not in QUEUE_ORDER_NAMES:
            raise StoreError(f"unknown queue order {order!r}: use {', '.join(QUEUE_ORDER_NAMES)}")
        streams: list[list[tuple[Any, ...]]] = []
        for status in dict.fromkeys(statuses):
            if order == "id":
                rows = s.execute(base(status).order_by(DocumentRow.id).limit(need)).all()
                streams.append([((0, 0.0, r[0]), r) for r in rows])
                continue
            col, idx = _ORDER_COLUMNS[order]
            scored = s.execute(
                base(status).where(col.is_not(None)).order_by(col, DocumentRow.id).limit(need)
            ).all()
            stream = [((0, r[idx], r[0]), r) for r in scored]
            if len(scored) < need:
                unscored = s.execute(
                    base(status).where(col.is_(None)).order_by(DocumentRow.id)
                    .limit(need - len(scored))
                ).all()
                stream += [((1, 0.0, r[0]), r) for r in unscored]
            streams.append(stream)
        merged = heapq.merge(*streams, key=lambda item: item[0])
        return [_row_from_tuple(r) for _k, r in islice(merged, offset, need)]


def status_counts(engine: Engine, project: str) -> dict[str, int]:
    with read_session(engine) as s:
        proj = _project(s, project)
        rows = s.execute(
            select(DocumentRow.status, func.count())
            .where(DocumentRow.project_id == proj.id, _visible())
            .group_by(DocumentRow.status)
        ).all()
    counts = dict.fromkeys(STATUSES, 0)
    counts.update({st: int(n) for st, n in rows})
    return counts


def set_queue_scores(
    engine: Engine, project: str, strategy: str, scores: Mapping[int, float], *,
    model_version: str | None = None, actor: Actor = SYSTEM,
) -> int:
    """Replace one strategy's scores for a project (the active-learning ordering hook)."""
    if not strategy or ":" in strategy:
        raise StoreError("a strategy name must be non-empty and contain no ':'")
    now = utcnow()
    with write_session(engine) as s:
        actor = check(s, actor, "admin", "set queue scores")
        proj = _project(s, project)
        s.execute(delete(QueueScore).where(QueueScore.project_id == proj.id,
                                           QueueScore.strategy == strategy))
        rows = [{"strategy": strategy, "document_id": int(d), "project_id": proj.id,
                 "score": float(v), "model_version": model_version, "computed_at": now}
                for d, v in scores.items()]
        if rows:
            s.execute(insert(QueueScore), rows)
        record_event(s, actor, "queue.scores", "project", proj.id, project_id=proj.id,
                     after={"strategy": strategy, "n": len(rows), "model_version": model_version})
    if len(rows) >= ANALYZE_AFTER_ROWS:
        refresh_statistics(engine, ("queue_scores",))
    return len(rows)


# ----------------------------------------------------------------- documents


def find_document(engine: Engine, project: str, external_id: str) -> int:
    with read_session(engine) as s:
        proj = _project(s, project)
        doc_id = s.scalar(select(DocumentRow.id).where(
            DocumentRow.project_id == proj.id, DocumentRow.external_id == external_id,
            _visible()))
    if doc_id is None:
        raise NotFound(f"project {project!r} has no document {external_id!r}")
    return int(doc_id)


def _latest_prediction(s: Session, doc_id: int) -> PredictionRow | None:
    return s.scalar(select(PredictionRow).where(PredictionRow.document_id == doc_id)
                    .order_by(PredictionRow.id.desc()).limit(1))


def _prediction_layer(p: PredictionRow) -> PredictionLayer:
    return PredictionLayer(p.id, p.model_version, p.model_version_id, spans_from_json(p.spans),
                           p.logprob, p.logprob_norm, p.n_tokens, p.bias, _now(p.created_at))


def _layer_rows(s: Session, doc_id: int, version: int) -> list[Annotation]:
    return list(s.scalars(
        select(Annotation).where(Annotation.document_id == doc_id,
                                 Annotation.doc_version == version)
        .order_by(Annotation.start_char, Annotation.end_char, Annotation.label)
    ))


def _ann_span(a: Annotation) -> Span:
    return Span(a.start_char, a.end_char, a.label, a.source, a.score)


def _doc_meta(d: DocumentRow) -> dict[str, Any]:
    meta = dict(d.meta or {})
    meta.update({"db_id": d.id, "version": d.version, "status": d.status})
    if d.patient_id is not None:
        meta["patient_id"] = d.patient_id
    return meta


def get_document(engine: Engine, doc_id: int) -> DocumentLayers:
    with read_session(engine) as s:
        d = _document(s, doc_id)
        pred = _latest_prediction(s, doc_id)
        rows = _layer_rows(s, doc_id, d.version) if d.version > 0 else []
        records = tuple(
            AnnotationRecord(
                _ann_span(a), a.decision, a.author, _now(a.created_at), _now(a.updated_at),
                Span(a.pred_start, a.pred_end, a.pred_label, a.pred_source or "")
                if a.pred_start is not None and a.pred_end is not None and a.pred_label else None,
            )
            for a in rows
        )
        reviewed = tuple(r.span for r in records if r.decision != "rejected")
        document = Document(d.external_id, d.text, reviewed, _doc_meta(d))
        return DocumentLayers(
            d.id, d.project_id, document, d.status, d.version, d.assigned_to,
            _now(d.updated_at), d.updated_by,
            _prediction_layer(pred) if pred is not None else None, records,
        )


def set_status(engine: Engine, doc_id: int, status: str, *, actor: Actor = SYSTEM) -> None:
    """Mark a document skipped, or put it back to new; ``reviewed`` comes only from a save."""
    if status not in ("new", "skipped", "in_review"):
        raise StoreError(f"status {status!r} cannot be set directly")
    with write_session(engine) as s:
        actor = check(s, actor, "reviewer", "change a note's status")
        d = _document(s, doc_id, lock=True)
        if d.version > 0 or d.status == "reviewed":
            # Skipping (or resetting) a reviewed note would drop a reviewed layer out of
            # every export while the manifest still counted it as reviewed.
            raise StoreError(
                f"document {doc_id} has been reviewed (version {d.version}): skip applies only to"
                " unreviewed notes; review it again to change it"
            ).with_code("E_REVIEWED")
        before = {"status": d.status, "assigned_to": d.assigned_to}
        d.status = status
        if status == "new":
            d.assigned_to, d.assigned_at = None, None
        d.updated_at = utcnow()
        record_event(s, actor, "document.status", "document", doc_id, project_id=d.project_id,
                     before=before, after={"status": status, "assigned_to": d.assigned_to})


def claim_next(
    engine: Engine, project: str, reviewer: Actor, *, order: str = DEFAULT_QUEUE_ORDER, resume: bool = True,
) -> DocumentLayers | None:
    """Assign the next unassigned new document to ``reviewer``; two reviewers never get the same one.

    PostgreSQL locks the candidate row with ``FOR UPDATE SKIP LOCKED`` so a
    concurrent claimer takes the next one; SQLite write transactions are
    ``BEGIN IMMEDIATE`` and the UPDATE is guarded by ``assigned_to IS NULL``.
    With ``resume``, a document already in review by this reviewer comes first.
    """
    if order not in QUEUE_ORDER_NAMES:
        raise StoreError(f"unknown queue order {order!r}: use {', '.join(QUEUE_ORDER_NAMES)}")
    claimed: int | None = None
    with write_session(engine) as s:
        reviewer = check(s, reviewer, "reviewer", "claim a note")
        proj = _project(s, project)
        if resume:
            claimed = s.scalar(
                select(DocumentRow.id).where(
                    DocumentRow.project_id == proj.id, DocumentRow.status == "in_review",
                    DocumentRow.assigned_to == reviewer)
                .order_by(DocumentRow.assigned_at, DocumentRow.id).limit(1))
        for _attempt in range(20):
            if claimed is not None:
                break
            col = DocumentRow.id if order == "id" else _ORDER_COLUMNS[order][0]
            free = select(DocumentRow.id).where(
                DocumentRow.project_id == proj.id, DocumentRow.status == "new",
                DocumentRow.assigned_to.is_(None), _visible())
            # Scored documents first, through the queue index; unpredicted ones after.
            candidate = s.scalar(
                free.where(col.is_not(None)).order_by(col, DocumentRow.id).limit(1)
                .with_for_update(skip_locked=True)
            )
            if candidate is None:
                candidate = s.scalar(
                    free.where(col.is_(None)).order_by(DocumentRow.id).limit(1)
                    .with_for_update(skip_locked=True)
                )
            if candidate is None:
                return None
            res = s.execute(
                update(DocumentRow)
                .where(DocumentRow.id == candidate, DocumentRow.assigned_to.is_(None),
                       DocumentRow.status == "new")
                .values(assigned_to=reviewer, assigned_at=utcnow(), status="in_review")
                .execution_options(synchronize_session=False)
            )
            if res.rowcount == 1:
                claimed = candidate
                record_event(s, reviewer, "document.claim", "document", candidate,
                             project_id=proj.id, after={"assigned_to": reviewer})
    if claimed is None:
        return None
    return get_document(engine, claimed)


def release(engine: Engine, doc_id: int, reviewer: Actor) -> bool:
    """Give a claimed, unsaved document back to the queue."""
    with write_session(engine) as s:
        reviewer = check(s, reviewer, "reviewer", "release a note")
        d = _document(s, doc_id, lock=True)
        if d.status != "in_review" or d.assigned_to != reviewer:
            return False
        d.status = "reviewed" if d.version > 0 else "new"
        d.assigned_to, d.assigned_at = None, None
        record_event(s, reviewer, "document.release", "document", doc_id, project_id=d.project_id)
        return True


# ----------------------------------------------------------------- reviews


def _decide(
    spans: Sequence[Span], predicted: Sequence[Span], reviewer: str
) -> list[tuple[Span, str, Span | None]]:
    """Label each reviewed span accepted/modified/added against the prediction; unmatched
    predicted spans come back as rejected."""
    by_key = {p.key: p for p in predicted}
    used: set[tuple[int, int, str]] = set()
    out: list[tuple[Span, str, Span | None]] = []
    human = f"human:{reviewer}"
    pending: list[Span] = []
    for sp in spans:
        p = by_key.get(sp.key)
        if p is not None:
            used.add(p.key)
            out.append((Span(sp.start, sp.end, sp.label, p.source, p.score), "accepted", p))
        else:
            pending.append(sp)
    for sp in pending:
        match = next((p for p in predicted if p.key not in used and p.overlaps(sp)), None)
        own = sp.source if sp.source.startswith("human:") or sp.source == "gold" else human
        if match is not None:
            used.add(match.key)
            out.append((Span(sp.start, sp.end, sp.label, human, 1.0), "modified", match))
        else:
            out.append((Span(sp.start, sp.end, sp.label, own, 1.0 if own == human else sp.score),
                        "added", None))
    for p in predicted:
        if p.key not in used:
            out.append((p, "rejected", p))
    return out


def save_review(
    engine: Engine,
    doc_id: int,
    reviewer: str,
    spans: Iterable[Span],
    base_version: int,
    *,
    started_at: datetime | None = None,
    draft_id: int | None = None,
) -> ReviewSaved | ReviewConflict:
    """Save the reviewed layer if nobody saved since ``base_version``; else keep it as a draft.

    ``draft_id`` marks a draft as reapplied in the same transaction.
    """
    layer = sort_spans(spans)
    finished = utcnow()
    started = _aware(started_at)
    duration = (finished - started).total_seconds() if started is not None else None
    with write_session(engine) as s:
        reviewer = check(s, reviewer, "reviewer", "save a review")
        d = _document(s, doc_id)
        _check_layer(layer, d.n_chars, doc_id)
        res = s.execute(
            update(DocumentRow)
            .where(DocumentRow.id == doc_id, DocumentRow.version == base_version)
            .values(version=base_version + 1, status="reviewed", updated_at=finished,
                    updated_by=reviewer)
            .execution_options(synchronize_session=False)
        )
        if res.rowcount != 1:
            current = s.execute(
                select(DocumentRow.version, DocumentRow.updated_by, DocumentRow.updated_at)
                .where(DocumentRow.id == doc_id)
            ).one()
            draft = ReviewDraft(document_id=doc_id, author=reviewer, base_version=base_version,
                                conflict_version=current[0], spans=spans_to_json(layer))
            s.add(draft)
            s.add(Review(document_id=doc_id, reviewer=reviewer, started_at=started,
                         finished_at=finished, duration_s=duration, base_version=base_version,
                         new_version=None, outcome="conflict"))
            s.flush()
            record_event(s, reviewer, "review.conflict", "document", doc_id,
                         project_id=d.project_id,
                         before={"version": current[0], "changed_by": current[1]},
                         after={"base_version": base_version, "draft_id": draft.id,
                                "spans": _offsets(layer)})
            return ReviewConflict(doc_id, base_version, int(current[0]), current[1],
                                  _now(current[2]), draft.id, tuple(layer))
        new_version = base_version + 1
        pred = _latest_prediction(s, doc_id)
        predicted = spans_from_json(pred.spans) if pred is not None else ()
        previous = {(a.start_char, a.end_char, a.label): a.created_at
                    for a in (_layer_rows(s, doc_id, base_version) if base_version > 0 else [])
                    if a.decision != "rejected"}
        review = Review(document_id=doc_id, reviewer=reviewer, started_at=started,
                        finished_at=finished, duration_s=duration, base_version=base_version,
                        new_version=new_version, outcome="saved")
        s.add(review)
        s.flush()
        decided = _decide(layer, predicted, reviewer)
        rows = [{
            "document_id": doc_id, "doc_version": new_version, "review_id": review.id,
            "start_char": sp.start, "end_char": sp.end, "label": sp.label, "source": sp.source,
            "score": float(sp.score), "author": reviewer, "decision": decision,
            "prediction_id": pred.id if p is not None and pred is not None else None,
            "pred_start": p.start if p else None, "pred_end": p.end if p else None,
            "pred_label": p.label if p else None, "pred_source": p.source if p else None,
            "created_at": previous.get(sp.key, finished) if decision != "rejected" else finished,
            "updated_at": finished,
        } for sp, decision, p in decided]
        if rows:
            s.execute(insert(Annotation), rows)
        if draft_id is not None:
            s.execute(update(ReviewDraft).where(ReviewDraft.id == draft_id,
                                                ReviewDraft.document_id == doc_id)
                      .values(resolved_at=finished)
                      .execution_options(synchronize_session=False))
        # The reviewer's work-in-progress draft of this note is now saved for real.
        s.execute(update(ReviewDraft).where(ReviewDraft.document_id == doc_id,
                                            ReviewDraft.author == reviewer,
                                            ReviewDraft.reason == "autosave",
                                            ReviewDraft.resolved_at.is_(None))
                  .values(resolved_at=finished)
                  .execution_options(synchronize_session=False))
        counts = dict(Counter(decision for _sp, decision, _p in decided))
        record_event(s, reviewer, "review.save", "document", doc_id, project_id=d.project_id,
                     before={"version": base_version, "spans": _offsets(_previous_spans(previous))},
                     after={"version": new_version, "spans": _offsets(layer),
                            "decisions": counts,
                            "seconds": round(duration, 1) if duration is not None else None})
        return ReviewSaved(doc_id, new_version, review.id, counts)


def _previous_spans(previous: Mapping[tuple[int, int, str], Any]) -> list[Span]:
    return [Span(a, b, c) for a, b, c in previous]


def list_drafts(
    engine: Engine, *, doc_id: int | None = None, author: str | None = None,
    open_only: bool = True,
) -> list[Draft]:
    q = select(ReviewDraft).order_by(ReviewDraft.id.desc())
    if doc_id is not None:
        q = q.where(ReviewDraft.document_id == doc_id)
    if author is not None:
        q = q.where(ReviewDraft.author == author)
    if open_only:
        q = q.where(ReviewDraft.resolved_at.is_(None))
    with read_session(engine) as s:
        return [Draft(r.id, r.document_id, r.author, r.base_version, r.conflict_version,
                      spans_from_json(r.spans), _now(r.created_at), _aware(r.resolved_at),
                      r.reason or "conflict")
                for r in s.scalars(q)]


def autosave_draft(
    engine: Engine, doc_id: int, author: Actor, spans: Iterable[Span], base_version: int
) -> int:
    """Keep a reviewer's unsaved layer of a note (one open autosave per note and author).

    The review editor sends it a moment after each edit, so a closed tab or a
    lost session loses nothing; ``save_review`` resolves it. Not audited: it is
    work in progress, not a decision.
    """
    layer = sort_spans(spans)
    with write_session(engine) as s:
        author = check(s, author, "reviewer", "autosave a draft")
        d = _document(s, doc_id)
        _check_layer(layer, d.n_chars, doc_id)
        row = s.scalar(select(ReviewDraft).where(
            ReviewDraft.document_id == doc_id, ReviewDraft.author == author,
            ReviewDraft.reason == "autosave", ReviewDraft.resolved_at.is_(None))
            .order_by(ReviewDraft.id.desc()).limit(1))
        if row is None:
            row = ReviewDraft(document_id=doc_id, author=author, base_version=base_version,
                              conflict_version=base_version, reason="autosave")
            s.add(row)
        row.base_version = row.conflict_version = base_version
        row.spans = spans_to_json(layer)
        row.created_at = utcnow()
        s.flush()
        return int(row.id)


def reopen(engine: Engine, doc_id: int, reviewer: Actor) -> bool:
    """Take back a note this reviewer just accepted: in review again, assigned to them.

    Its saved versions stay in the history; the next save makes a new version.
    Refused (``False``) when someone else saved it since or holds it.
    """
    with write_session(engine) as s:
        reviewer = check(s, reviewer, "reviewer", "reopen a note")
        d = _document(s, doc_id, lock=True)
        if d.status == "in_review" and d.assigned_to == reviewer:
            return True
        if d.status != "reviewed" or d.updated_by != reviewer or d.assigned_to not in (None, reviewer):
            return False
        d.status, d.assigned_to, d.assigned_at = "in_review", reviewer, utcnow()
        record_event(s, reviewer, "document.reopen", "document", doc_id, project_id=d.project_id,
                     before={"status": "reviewed", "version": d.version},
                     after={"status": "in_review", "assigned_to": reviewer})
        return True


def discard_draft(engine: Engine, draft_id: int, *, actor: Actor) -> None:
    """Close a draft without applying it (it stays in the table, marked resolved)."""
    with write_session(engine) as s:
        actor = check(s, actor, "reviewer", "discard a draft")
        r = s.get(ReviewDraft, draft_id)
        if r is None:
            raise NotFound(f"no draft {draft_id}")
        r.resolved_at = utcnow()
        record_event(s, actor, "draft.discard", "review_draft", draft_id)


# ----------------------------------------------------------------- predictions


def record_predictions(
    engine: Engine, items: Iterable[PredictionInput], *, progress: Progress | None = None,
    total: int | None = None, chunk_size: int = 200, actor: Actor = SYSTEM,
) -> int:
    """Store predictions and copy their log-probabilities onto the documents for the queue.

    Committed chunk by chunk: predictions can be recomputed, and a long
    pre-annotation run should keep what it finished if stopped.
    """
    n = 0
    it = iter(items)
    while True:
        chunk = list(islice(it, chunk_size))
        if not chunk:
            break
        with write_session(engine) as s:
            check(s, actor, "admin", "store predictions")
            lengths = dict(s.execute(select(DocumentRow.id, DocumentRow.n_chars)
                                     .where(DocumentRow.id.in_({p.doc_id for p in chunk}))).all())
            rows = []
            for p in chunk:
                if p.doc_id not in lengths:
                    raise NotFound(f"no document with id {p.doc_id}")
                for sp in p.spans:
                    sp.check_fits(lengths[p.doc_id], doc_id=f"document {p.doc_id}")
                    _finite_or_none(sp.score, f"span {sp.start}..{sp.end} score", p.doc_id)
                _finite_or_none(p.logprob, "logprob", p.doc_id)
                _finite_or_none(p.logprob_norm, "logprob_norm", p.doc_id)
                norm = p.logprob_norm
                if norm is None and p.logprob is not None and p.n_tokens:
                    norm = p.logprob / p.n_tokens
                per_span = None if p.logprob is None else logprob_per_span(p.logprob, len(p.spans))
                rows.append({"document_id": p.doc_id, "model_version_id": p.model_version_id,
                             "model_version": p.model_version, "spans": spans_to_json(p.spans),
                             "logprob": p.logprob, "logprob_norm": norm, "n_tokens": p.n_tokens,
                             "bias": p.bias, "created_at": utcnow()})
                s.execute(update(DocumentRow).where(DocumentRow.id == p.doc_id)
                          .values(logprob=p.logprob, logprob_norm=norm, logprob_span=per_span)
                          .execution_options(synchronize_session=False))
            s.execute(insert(PredictionRow), rows)
        n += len(chunk)
        if progress is not None:
            progress(f"stored {n} predictions", min(n / total, 1.0) if total else 0.0)
    if n >= ANALYZE_AFTER_ROWS:
        refresh_statistics(engine, ("documents", "predictions"))
    return n


def record_prediction(
    engine: Engine, doc_id: int, spans: Iterable[Span], *, model_version: str,
    logprob: float | None = None, logprob_norm: float | None = None,
    n_tokens: int | None = None, bias: float = 0.0, model_version_id: int | None = None,
) -> None:
    record_predictions(engine, [PredictionInput(doc_id, tuple(spans), model_version, logprob,
                                                logprob_norm, n_tokens, bias, model_version_id)])


def unreviewed_documents(
    engine: Engine, project: str, *, batch_size: int = 500
) -> Iterator[tuple[int, Document]]:
    """``(doc_id, Document)`` for every new or in-review note, streamed in id order."""
    last = 0
    while True:
        with read_session(engine) as s:
            proj = _project(s, project)
            rows = list(s.scalars(
                select(DocumentRow).where(DocumentRow.project_id == proj.id,
                                          DocumentRow.status.in_(UNREVIEWED),
                                          DocumentRow.id > last, _visible())
                .order_by(DocumentRow.id).limit(batch_size)))
        if not rows:
            return
        for d in rows:
            yield d.id, Document(d.external_id, d.text, (), _doc_meta(d))
        last = rows[-1].id


def count_documents(engine: Engine, project: str, statuses: Sequence[str] = STATUSES) -> int:
    with read_session(engine) as s:
        proj = _project(s, project)
        return int(s.scalar(select(func.count()).select_from(DocumentRow).where(
            DocumentRow.project_id == proj.id, DocumentRow.status.in_(list(statuses)),
            _visible())) or 0)


# ----------------------------------------------------------------- reviewed corpus


def reviewed_corpus(
    engine: Engine, project: str, *, batch_size: int = 500
) -> Iterator[Document]:
    """Every reviewed document with its current reviewed layer (rejections excluded), by id."""
    last = 0
    while True:
        with read_session(engine) as s:
            proj = _project(s, project)
            docs = list(s.scalars(
                select(DocumentRow).where(DocumentRow.project_id == proj.id,
                                          DocumentRow.status == "reviewed",
                                          DocumentRow.version > 0, DocumentRow.id > last,
                                          _visible())
                .order_by(DocumentRow.id).limit(batch_size)))
            if not docs:
                return
            versions = {d.id: d.version for d in docs}
            layers: dict[int, list[Span]] = {d.id: [] for d in docs}
            for a in s.scalars(select(Annotation).where(
                    Annotation.document_id.in_(list(versions)),
                    Annotation.decision != "rejected")):
                if versions[a.document_id] == a.doc_version:
                    layers[a.document_id].append(_ann_span(a))
        for d in docs:
            yield Document(d.external_id, d.text, tuple(sort_spans(layers[d.id])), _doc_meta(d))
        last = docs[-1].id


# ----------------------------------------------------------------- model versions


def _mv_info(s: Session, m: ModelVersion, project: str) -> ModelVersionInfo:
    parent = s.scalar(select(ModelVersion.version).where(ModelVersion.id == m.parent_id)) \
        if m.parent_id is not None else None
    return ModelVersionInfo(m.id, project, m.version, _now(m.created_at), m.n_train_docs,
                            dict(m.hyperparams or {}), dict(m.metrics or {}), m.artifact_path,
                            bool(m.active), parent)


def register_model_version(
    engine: Engine, project: str, *, version: str, artifact_path: str, n_train_docs: int = 0,
    hyperparams: Mapping[str, Any] | None = None, metrics: Mapping[str, Any] | None = None,
    parent: str | None = None, activate: bool = False, actor: Actor = SYSTEM,
) -> ModelVersionInfo:
    with write_session(engine) as s:
        actor = check(s, actor, "admin", "register a model version")
        proj = _project(s, project)
        if s.scalar(select(ModelVersion.id).where(ModelVersion.project_id == proj.id,
                                                  ModelVersion.version == version)) is not None:
            raise AlreadyExists(f"project {project!r} already has model version {version!r}")
        parent_id = None
        if parent is not None:
            parent_id = s.scalar(select(ModelVersion.id).where(
                ModelVersion.project_id == proj.id, ModelVersion.version == parent))
            if parent_id is None:
                raise NotFound(f"no parent model version {parent!r}")
        m = ModelVersion(project_id=proj.id, version=version, artifact_path=artifact_path,
                         n_train_docs=n_train_docs, hyperparams=dict(hyperparams or {}),
                         metrics=dict(metrics or {}), parent_id=parent_id, active=False,
                         created_by=actor)
        s.add(m)
        s.flush()
        record_event(s, actor, "model.register", "model_version", m.id, project_id=proj.id,
                     after={"version": version, "parent": parent, "n_train_docs": n_train_docs})
        if activate:
            _activate(s, proj.id, m, actor)
        return _mv_info(s, m, project)


def _activate(s: Session, project_id: int, m: ModelVersion, actor: str) -> None:
    previous = s.scalar(select(ModelVersion.version).where(
        ModelVersion.project_id == project_id, ModelVersion.active.is_(True)))
    # Deactivate first: the partial unique index allows one active model per project.
    s.execute(update(ModelVersion).where(ModelVersion.project_id == project_id,
                                         ModelVersion.active.is_(True))
              .values(active=False).execution_options(synchronize_session=False))
    s.execute(update(ModelVersion).where(ModelVersion.id == m.id).values(active=True)
              .execution_options(synchronize_session=False))
    s.refresh(m)
    record_event(s, actor, "model.activate", "model_version", m.id, project_id=project_id,
                 before={"active": previous}, after={"active": m.version})


def activate_model_version(
    engine: Engine, project: str, version: str, *, actor: Actor = SYSTEM
) -> ModelVersionInfo:
    with write_session(engine) as s:
        actor = check(s, actor, "admin", "activate a model version")
        proj = _project(s, project)
        m = s.scalar(select(ModelVersion).where(ModelVersion.project_id == proj.id,
                                                ModelVersion.version == version))
        if m is None:
            raise NotFound(f"project {project!r} has no model version {version!r}")
        _activate(s, proj.id, m, actor)
        return _mv_info(s, m, project)


def active_model_version(engine: Engine, project: str) -> ModelVersionInfo | None:
    with read_session(engine) as s:
        proj = _project(s, project)
        m = s.scalar(select(ModelVersion).where(ModelVersion.project_id == proj.id,
                                                ModelVersion.active.is_(True)))
        return _mv_info(s, m, project) if m is not None else None


def list_model_versions(engine: Engine, project: str) -> list[ModelVersionInfo]:
    with read_session(engine) as s:
        proj = _project(s, project)
        return [_mv_info(s, m, project) for m in s.scalars(
            select(ModelVersion).where(ModelVersion.project_id == proj.id)
            .order_by(ModelVersion.id))]
