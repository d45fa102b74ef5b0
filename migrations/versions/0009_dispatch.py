"""jobs.dispatched_at: when the job's current message was committed for sending (the reconciler's grace clock)

Revision ID: 0009_dispatch
Revises: 0008_exact_trace_baselines
"""
from alembic import op
import sqlalchemy as sa

revision = '0009_dispatch'
down_revision = '0008_exact_trace_baselines'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('dispatched_at', sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.drop_column('dispatched_at')
