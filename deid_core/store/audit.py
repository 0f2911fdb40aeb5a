"""The append-only audit trail: who did what, when, with before/after as JSON.

Events are written in the same transaction as the change they describe, so
there is never a change without its event or an event without its change.
Before/after hold ids, offsets, labels and settings, never note text.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from deid_core.store.engine import read_session
from deid_core.store.models import AuditEvent, utcnow


@dataclass(frozen=True, slots=True)
class AuditRecord:
    id: int
    at: datetime
    actor: str
    action: str
    entity_type: str
    entity_id: str | None
    project_id: int | None
    before: dict[str, Any] | None
    after: dict[str, Any] | None


def record_event(
    session: Session,
    actor: str,
    action: str,
    entity_type: str,
    entity_id: object = None,
    *,
    project_id: int | None = None,
    before: dict[str, Any] | None = None,
    after: dict[str, Any] | None = None,
) -> None:
    """Append one event inside the caller's transaction."""
    session.add(
        AuditEvent(
            at=utcnow(), actor=actor, action=action, entity_type=entity_type,
            entity_id=None if entity_id is None else str(entity_id),
            project_id=project_id, before=before, after=after,
        )
    )


def list_events(
    engine: Engine,
    *,
    entity_type: str | None = None,
    entity_id: object = None,
    actor: str | None = None,
    action: str | None = None,
    project_id: int | None = None,
    limit: int = 1000,
) -> list[AuditRecord]:
    """Newest first."""
    q = select(AuditEvent).order_by(AuditEvent.id.desc()).limit(limit)
    if entity_type is not None:
        q = q.where(AuditEvent.entity_type == entity_type)
    if entity_id is not None:
        q = q.where(AuditEvent.entity_id == str(entity_id))
    if actor is not None:
        q = q.where(AuditEvent.actor == actor)
    if action is not None:
        q = q.where(AuditEvent.action == action)
    if project_id is not None:
        q = q.where(AuditEvent.project_id == project_id)
    with read_session(engine) as s:
        return [
            AuditRecord(e.id, e.at, e.actor, e.action, e.entity_type, e.entity_id, e.project_id,
                        e.before, e.after)
            for e in s.scalars(q)
        ]
