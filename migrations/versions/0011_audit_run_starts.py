"""audit run fencing: audit_runs.starts (the start token of the run's current start)

Revision ID: 0011_audit_run_starts
Revises: 0010_prediction_logs
"""
from alembic import op
import sqlalchemy as sa

revision = '0011_audit_run_starts'
down_revision = '0010_prediction_logs'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('audit_runs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('starts', sa.Integer(), nullable=False, server_default='0'))


def downgrade() -> None:
    with op.batch_alter_table('audit_runs', schema=None) as batch_op:
        batch_op.drop_column('starts')
