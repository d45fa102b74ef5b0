"""trajectory_points.exact (exact constraint values every few iterations) and baselines (ERM once per data and split)

Revision ID: 0008_exact_trace_baselines
Revises: 0007_sessions
"""
from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")

revision = '0008_exact_trace_baselines'
down_revision = '0007_sessions'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('trajectory_points', schema=None) as batch_op:
        batch_op.add_column(sa.Column('exact', JSON, nullable=True))
    op.create_table('baselines',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('key', sa.String(length=64), nullable=False),
    sa.Column('dataset_id', sa.String(length=32), nullable=False),
    sa.Column('spec', JSON, nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('result', JSON, nullable=True),
    sa.Column('error', sa.Text(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('finished_at', sa.DateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['dataset_id'], ['datasets.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('key')
    )
    with op.batch_alter_table('baselines', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_baselines_dataset_id'), ['dataset_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('baselines', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_baselines_dataset_id'))
    op.drop_table('baselines')
    with op.batch_alter_table('trajectory_points', schema=None) as batch_op:
        batch_op.drop_column('exact')
