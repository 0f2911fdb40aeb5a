"""SQLAlchemy 2.0 tables of the annotation store.

Predictions are kept apart from the reviewed layer (as Label Studio does), and
every reviewed layer is kept: ``Annotation.doc_version`` says which saved
version of the document a row belongs to, so a new save adds rows instead of
overwriting the old ones. People are referred to by username *text*, not by a
foreign key, so deactivating (or even deleting) a user never touches their
annotations, reviews or audit events. Offsets are checked in the database
(``start >= 0``, ``start < end``, as doccano does); ``end <= len(text)`` is
checked by the library.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    CheckConstraint,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

STATUSES = ("new", "in_review", "reviewed", "skipped")
DECISIONS = ("accepted", "rejected", "added", "modified")
ROLES = ("reviewer", "admin")


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def _in(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


class Base(DeclarativeBase):
    # Named constraints so Alembic can alter them on SQLite (batch mode) and PostgreSQL alike.
    metadata = MetaData(
        naming_convention={
            "ix": "ix_%(column_0_label)s",
            "uq": "uq_%(table_name)s_%(column_0_name)s",
            "ck": "ck_%(table_name)s_%(constraint_name)s",
            "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
            "pk": "pk_%(table_name)s",
        }
    )
    type_annotation_map = {dict[str, Any]: JSON, list[Any]: JSON}


Stamp = DateTime(timezone=True)


class User(Base):
    __tablename__ = "users"
    __table_args__ = (CheckConstraint(_in("role", ROLES), name="role"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    username: Mapped[str] = mapped_column(String(100), unique=True)
    password_hash: Mapped[str] = mapped_column(String(255))
    role: Mapped[str] = mapped_column(String(20), default="reviewer")
    active: Mapped[bool] = mapped_column(Boolean, default=True)
    created_at: Mapped[datetime] = mapped_column(Stamp, default=utcnow)
    password_changed_at: Mapped[datetime] = mapped_column(Stamp, default=utcnow)
    deactivated_at: Mapped[datetime | None] = mapped_column(Stamp)


class Project(Base):
    __tablename__ = "projects"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    lang: Mapped[str] = mapped_column(String(8))
    scheme: Mapped[str] = mapped_column(String(500))
    settings: Mapped[dict[str, Any]] = mapped_column(default=dict)
    created_at: Mapped[datetime] = mapped_column(Stamp, default=utcnow)
    created_by: Mapped[str | None] = mapped_column(String(100))


class ImportBatch(Base):
    __tablename__ = "import_batches"

    id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="RESTRICT"))
    format: Mapped[str] = mapped_column(String(20))
    annotations: Mapped[str] = mapped_column(String(20))
    source: Mapped[str] = mapped_column(String(2000))
    created_at: Mapped[datetime] = mapped_column(Stamp, default=utcnow)
    created_by: Mapped[str | None] = mapped_column(String(100))
    n_documents: Mapped[int] = mapped_column(Integer, default=0)
    n_duplicates: Mapped[int] = mapped_column(Integer, default=0)
    #: ``importing`` while a chunked (SQLite) import runs: its notes are hidden until ``complete``.
    status: Mapped[str] = mapped_column(String(20), default="complete", server_default="complete")
    owner: Mapped[str | None] = mapped_column(String(100))  # host-pid of a running import


class DocumentRow(Base):
    """A note. ``logprob``/``logprob_norm``/``logprob_span`` copy the latest prediction's so the queue needs no join.

    ``logprob_span`` (``deid_core.confidence.logprob_per_span``: log P per predicted
    span) is the default queue order; see docs/active.md "Queue order".
    """

    __tablename__ = "documents"
    __table_args__ = (
        UniqueConstraint("project_id", "sha256", name="uq_documents_project_sha256"),
        UniqueConstraint("project_id", "external_id", name="uq_documents_project_external_id"),
        CheckConstraint(_in("status", STATUSES), name="status"),
        CheckConstraint("version >= 0", name="version"),
        Index("ix_documents_queue_logprob", "project_id", "status", "logprob", "id"),
        Index("ix_documents_queue_logprob_norm", "project_id", "status", "logprob_norm", "id"),
        Index("ix_documents_queue_logprob_span", "project_id", "status", "logprob_span", "id"),
        Index("ix_documents_assigned", "project_id", "assigned_to", "status"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="RESTRICT"))
    external_id: Mapped[str] = mapped_column(String(500))
    patient_id: Mapped[str | None] = mapped_column(String(200))
    text: Mapped[str] = mapped_column(Text)
    sha256: Mapped[str] = mapped_column(String(64))
    n_chars: Mapped[int] = mapped_column(Integer)
    batch_id: Mapped[int | None] = mapped_column(
        ForeignKey("import_batches.id", ondelete="RESTRICT"), index=True
    )
    meta: Mapped[dict[str, Any]] = mapped_column(default=dict)
    status: Mapped[str] = mapped_column(String(20), default="new")
    assigned_to: Mapped[str | None] = mapped_column(String(100))
    assigned_at: Mapped[datetime | None] = mapped_column(Stamp)
    version: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(Stamp, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(Stamp, default=utcnow)
    updated_by: Mapped[str | None] = mapped_column(String(100))
    logprob: Mapped[float | None] = mapped_column(Float)
    logprob_norm: Mapped[float | None] = mapped_column(Float)
    logprob_span: Mapped[float | None] = mapped_column(Float)


class ModelVersion(Base):
    __tablename__ = "model_versions"
    __table_args__ = (
        UniqueConstraint("project_id", "version", name="uq_model_versions_project_version"),
        # At most one active model per project.
        Index(
            "uq_model_versions_active", "project_id", unique=True,
            sqlite_where=text("active"), postgresql_where=text("active"),
        ),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="RESTRICT"))
    version: Mapped[str] = mapped_column(String(100))
    created_at: Mapped[datetime] = mapped_column(Stamp, default=utcnow)
    created_by: Mapped[str | None] = mapped_column(String(100))
    n_train_docs: Mapped[int] = mapped_column(Integer, default=0)
    hyperparams: Mapped[dict[str, Any]] = mapped_column(default=dict)
    metrics: Mapped[dict[str, Any]] = mapped_column(default=dict)
    artifact_path: Mapped[str] = mapped_column(String(2000))
    active: Mapped[bool] = mapped_column(Boolean, default=False)
    parent_id: Mapped[int | None] = mapped_column(
        ForeignKey("model_versions.id", ondelete="RESTRICT")
    )


class PredictionRow(Base):
    __tablename__ = "predictions"
    __table_args__ = (Index("ix_predictions_document_latest", "document_id", "id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    document_id: Mapped[int] = mapped_column(ForeignKey("documents.id", ondelete="RESTRICT"))
    model_version_id: Mapped[int | None] = mapped_column(
        ForeignKey("model_versions.id", ondelete="RESTRICT"), index=True
    )
    model_version: Mapped[str] = mapped_column(String(100))
    spans: Mapped[list[Any]] = mapped_column(default=list)
    logprob: Mapped[float | None] = mapped_column(Float)
    logprob_norm: Mapped[float | None] = mapped_column(Float)
    n_tokens: Mapped[int | None] = mapped_column(Integer)
    bias: Mapped[float] = mapped_column(Float, default=0.0)
    created_at: Mapped[datetime] = mapped_column(Stamp, default=utcnow)


class Review(Base):
    __tablename__ = "reviews"
    __table_args__ = (
        CheckConstraint(_in("outcome", ("saved", "conflict")), name="outcome"),
        Index("ix_reviews_document", "document_id", "id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    document_id: Mapped[int] = mapped_column(ForeignKey("documents.id", ondelete="RESTRICT"))
    reviewer: Mapped[str] = mapped_column(String(100), index=True)
    started_at: Mapped[datetime | None] = mapped_column(Stamp)
    finished_at: Mapped[datetime] = mapped_column(Stamp, default=utcnow)
    duration_s: Mapped[float | None] = mapped_column(Float)
    base_version: Mapped[int] = mapped_column(Integer)
    new_version: Mapped[int | None] = mapped_column(Integer)
    outcome: Mapped[str] = mapped_column(String(20))


class Annotation(Base):
    """One reviewed span of one saved version of a document."""

    __tablename__ = "annotations"
    __table_args__ = (
        CheckConstraint("start_char >= 0", name="start_nonneg"),
        CheckConstraint("start_char < end_char", name="start_before_end"),
        CheckConstraint(_in("decision", DECISIONS), name="decision"),
        Index("ix_annotations_layer", "document_id", "doc_version"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    document_id: Mapped[int] = mapped_column(ForeignKey("documents.id", ondelete="RESTRICT"))
    doc_version: Mapped[int] = mapped_column(Integer)
    review_id: Mapped[int | None] = mapped_column(
        ForeignKey("reviews.id", ondelete="RESTRICT"), index=True
    )
    start_char: Mapped[int] = mapped_column(Integer)
    end_char: Mapped[int] = mapped_column(Integer)
    label: Mapped[str] = mapped_column(String(100))
    source: Mapped[str] = mapped_column(String(200))
    score: Mapped[float] = mapped_column(Float, default=1.0)
    author: Mapped[str] = mapped_column(String(100))
    decision: Mapped[str] = mapped_column(String(20))
    prediction_id: Mapped[int | None] = mapped_column(
        ForeignKey("predictions.id", ondelete="RESTRICT"), index=True
    )
    pred_start: Mapped[int | None] = mapped_column(Integer)
    pred_end: Mapped[int | None] = mapped_column(Integer)
    pred_label: Mapped[str | None] = mapped_column(String(100))
    pred_source: Mapped[str | None] = mapped_column(String(200))
    created_at: Mapped[datetime] = mapped_column(Stamp, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(Stamp, default=utcnow)


class ReviewDraft(Base):
    """A reviewer's spans that could not be saved (conflict): kept so they can be reapplied."""

    __tablename__ = "review_drafts"
    __table_args__ = (Index("ix_review_drafts_open", "document_id", "author", "resolved_at"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    document_id: Mapped[int] = mapped_column(ForeignKey("documents.id", ondelete="RESTRICT"))
    author: Mapped[str] = mapped_column(String(100))
    base_version: Mapped[int] = mapped_column(Integer)
    conflict_version: Mapped[int] = mapped_column(Integer)
    spans: Mapped[list[Any]] = mapped_column(default=list)
    reason: Mapped[str] = mapped_column(String(50), default="conflict")
    created_at: Mapped[datetime] = mapped_column(Stamp, default=utcnow)
    resolved_at: Mapped[datetime | None] = mapped_column(Stamp)


class QueueScore(Base):
    """Per-strategy ordering hook for active learning: one score per document and strategy.

    Higher score = review sooner. The active-learning code writes rows with
    ``repository.set_queue_scores``; ``review_queue(order="strategy:<name>")`` reads them.
    """

    __tablename__ = "queue_scores"
    __table_args__ = (Index("ix_queue_scores_order", "project_id", "strategy", "score"),)

    strategy: Mapped[str] = mapped_column(String(50), primary_key=True)
    document_id: Mapped[int] = mapped_column(
        ForeignKey("documents.id", ondelete="RESTRICT"), primary_key=True
    )
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="RESTRICT"))
    score: Mapped[float] = mapped_column(Float)
    model_version: Mapped[str | None] = mapped_column(String(100))
    computed_at: Mapped[datetime] = mapped_column(Stamp, default=utcnow)


class AuditEvent(Base):
    """Append-only (database triggers refuse UPDATE and DELETE). Never holds note text."""

    __tablename__ = "audit_events"
    __table_args__ = (Index("ix_audit_events_entity", "entity_type", "entity_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    at: Mapped[datetime] = mapped_column(Stamp, default=utcnow, index=True)
    actor: Mapped[str] = mapped_column(String(100))
    action: Mapped[str] = mapped_column(String(100))
    entity_type: Mapped[str] = mapped_column(String(50))
    entity_id: Mapped[str | None] = mapped_column(String(100))
    project_id: Mapped[int | None] = mapped_column(Integer, index=True)
    before: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    after: Mapped[dict[str, Any] | None] = mapped_column(JSON)


class SurrogateMappingRow(Base):
    """Which surrogate an export used for a (hashed) original: never the original itself.

    ``key`` is ``HMAC-SHA256(project secret, scope, kind, normalised original)``
    and ``scope`` is ``"corpus"`` or an HMAC of the patient key, so without the
    secret a row says nothing about what it replaced. One row per key and
    project: exports insert with ON CONFLICT DO NOTHING, so concurrent exports
    of one project agree instead of failing.
    """

    __tablename__ = "surrogate_mappings"
    __table_args__ = (
        UniqueConstraint("project_id", "key", name="uq_surrogate_mappings_project_key"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="RESTRICT"))
    key: Mapped[str] = mapped_column(String(64))
    scope: Mapped[str] = mapped_column(String(64))
    kind: Mapped[str] = mapped_column(String(50))
    label: Mapped[str] = mapped_column(String(100))
    surrogate: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(Stamp, default=utcnow)


class StoreSetting(Base):
    """Store-wide values (the fingerprint of the local administrators' secret, never the secret)."""

    __tablename__ = "store_settings"

    key: Mapped[str] = mapped_column(String(100), primary_key=True)
    value: Mapped[dict[str, Any]] = mapped_column(JSON)
    updated_at: Mapped[datetime] = mapped_column(Stamp, default=utcnow)


class LoginAttempt(Base):
    """One sign-in attempt, for throttling: who, from where, when, whether it matched. No password."""

    __tablename__ = "login_attempts"
    __table_args__ = (
        Index("ix_login_attempts_username_at", "username", "at"),
        Index("ix_login_attempts_client_at", "client", "at"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    at: Mapped[datetime] = mapped_column(Stamp, default=utcnow)
    username: Mapped[str] = mapped_column(String(100))
    client: Mapped[str] = mapped_column(String(100))
    success: Mapped[bool] = mapped_column(Boolean)
