"""prediction-log audits and score drift: audits.predictions, audits.baseline_run_id,
audit_runs.score_summary, audit_runs.score_drift

Revision ID: 0010_prediction_logs
Revises: 0009_dispatch
"""
from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")

revision = '0010_prediction_logs'
down_revision = '0009_dispatch'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('audits', schema=None) as batch_op:
        batch_op.add_column(sa.Column('predictions', JSON, nullable=True))
        batch_op.add_column(sa.Column('baseline_run_id', sa.String(length=32), nullable=True))
    with op.batch_alter_table('audit_runs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('score_summary', JSON, nullable=True))
        batch_op.add_column(sa.Column('score_drift', JSON, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('audit_runs', schema=None) as batch_op:
        batch_op.drop_column('score_drift')
        batch_op.drop_column('score_summary')
    op.execute("DELETE FROM audits WHERE job_id IS NULL AND model_artifact_id IS NULL")
    with op.batch_alter_table('audits', schema=None) as batch_op:
        batch_op.drop_column('baseline_run_id')
        batch_op.drop_column('predictions')
