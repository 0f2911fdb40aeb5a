"""queue confidence per predicted span: documents.logprob_span

Revision ID: 0004_logprob_span
Revises: 0003_17
Create Date: 2026-11-24 06:00:00

``documents.logprob_span`` = the latest prediction's log-probability divided
by (1 + its number of spans) (``deid_core.confidence.logprob_per_span``), the
default review-queue order since issue 13 (docs/active.md "Queue order"),
with its queue index. Notes that already have a prediction are filled in from
their latest prediction, so an existing queue keeps its notes scored.
"""
from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0004_logprob_span'
down_revision: str | None = '0003_17'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_BATCH = 1000


def upgrade() -> None:
    with op.batch_alter_table('documents') as batch_op:
        batch_op.add_column(sa.Column('logprob_span', sa.Float(), nullable=True))
        batch_op.create_index('ix_documents_queue_logprob_span',
                              ['project_id', 'status', 'logprob_span', 'id'], unique=False)
    documents = sa.table('documents', sa.column('id', sa.Integer), sa.column('logprob', sa.Float),
                         sa.column('logprob_span', sa.Float))
    predictions = sa.table('predictions', sa.column('id', sa.Integer),
                           sa.column('document_id', sa.Integer), sa.column('spans', sa.JSON))
    conn = op.get_bind()
    latest = (sa.select(predictions.c.document_id, sa.func.max(predictions.c.id).label('pid'))
              .group_by(predictions.c.document_id).subquery())
    last = 0
    while True:
        rows = conn.execute(
            sa.select(documents.c.id, documents.c.logprob, predictions.c.spans)
            .join(latest, latest.c.document_id == documents.c.id)
            .join(predictions, predictions.c.id == latest.c.pid)
            .where(documents.c.logprob.is_not(None), documents.c.id > last)
            .order_by(documents.c.id).limit(_BATCH)
        ).all()
        if not rows:
            break
        for doc_id, logprob, spans in rows:
            n_spans = len(spans or [])
            conn.execute(documents.update().where(documents.c.id == doc_id)
                         .values(logprob_span=float(logprob) / (1 + n_spans)))
        last = rows[-1][0]


def downgrade() -> None:
    with op.batch_alter_table('documents') as batch_op:
        batch_op.drop_index('ix_documents_queue_logprob_span')
        batch_op.drop_column('logprob_span')
