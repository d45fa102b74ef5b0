"""audit run fencing: audit_runs.starts (the start token of the run's current start)

Revision ID: 0012_audit_run_starts
Revises: 0011_audit_heartbeat
"""
from alembic import op
import sqlalchemy as sa

revision = '0012_audit_run_starts'
down_revision = '0011_audit_heartbeat'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('audit_runs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('starts', sa.Integer(), nullable=False, server_default='0'))


def downgrade() -> None:
    with op.batch_alter_table('audit_runs', schema=None) as batch_op:
        batch_op.drop_column('starts')
