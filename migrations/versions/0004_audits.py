"""audits: scheduled audits of a job's model, their runs and alerts

Revision ID: 0004
Revises: 0003
"""
from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")

revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def _index(table: str, *columns: str, unique: bool = False) -> None:
    with op.batch_alter_table(table, schema=None) as batch_op:
        for column in columns:
            batch_op.create_index(batch_op.f(f'ix_{table}_{column}'), [column], unique=unique)


def upgrade() -> None:
    op.create_table('audits',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('owner', sa.String(length=255), nullable=False),
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.Column('job_id', sa.String(length=32), nullable=False),
    sa.Column('dataset_id', sa.String(length=32), nullable=True),
    sa.Column('source', sa.String(length=2048), nullable=True),
    sa.Column('metrics', JSON, nullable=False),
    sa.Column('schedule', sa.String(length=255), nullable=True),
    sa.Column('webhook_url', sa.String(length=2048), nullable=True),
    sa.Column('enabled', sa.Boolean(), nullable=False),
    sa.Column('next_run_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['dataset_id'], ['datasets.id'], ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['job_id'], ['jobs.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id')
    )
    _index('audits', 'owner', 'job_id', 'dataset_id', 'next_run_at')
    op.create_table('audit_runs',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('owner', sa.String(length=255), nullable=False),
    sa.Column('audit_id', sa.String(length=32), nullable=False),
    sa.Column('trigger', sa.String(length=16), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('started_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('finished_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('data_sha256', sa.String(length=64), nullable=True),
    sa.Column('n_rows', sa.Integer(), nullable=True),
    sa.Column('group_sizes', JSON, nullable=True),
    sa.Column('results', JSON, nullable=True),
    sa.Column('previous_run_id', sa.String(length=32), nullable=True),
    sa.Column('breached', JSON, nullable=True),
    sa.Column('passed', sa.Boolean(), nullable=True),
    sa.Column('error', sa.Text(), nullable=True),
    sa.ForeignKeyConstraint(['audit_id'], ['audits.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id')
    )
    _index('audit_runs', 'owner', 'audit_id')
    op.create_table('alerts',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('owner', sa.String(length=255), nullable=False),
    sa.Column('audit_id', sa.String(length=32), nullable=False),
    sa.Column('run_id', sa.String(length=32), nullable=False),
    sa.Column('message', sa.Text(), nullable=False),
    sa.Column('breached', JSON, nullable=False),
    sa.Column('webhook_status', sa.String(length=16), nullable=False),
    sa.Column('webhook_attempts', sa.Integer(), nullable=False),
    sa.Column('webhook_last_error', sa.Text(), nullable=True),
    sa.Column('delivered_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['audit_id'], ['audits.id'], ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['run_id'], ['audit_runs.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('run_id')
    )
    _index('alerts', 'owner', 'audit_id')


def downgrade() -> None:
    op.drop_table('alerts')
    op.drop_table('audit_runs')
    op.drop_table('audits')
