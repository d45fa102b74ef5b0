"""audit runs beat a heartbeat while they run: audit_runs.heartbeat_at

Revision ID: 0011_audit_heartbeat
Revises: 0010_prediction_logs
"""
from alembic import op
import sqlalchemy as sa

revision = '0011_audit_heartbeat'
down_revision = '0010_prediction_logs'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('audit_runs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('heartbeat_at', sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('audit_runs', schema=None) as batch_op:
        batch_op.drop_column('heartbeat_at')
