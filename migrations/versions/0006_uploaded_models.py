"""uploaded models for audits: uploaded_models, audits.model_artifact_id, audits.job_id optional

Revision ID: 0006
Revises: 0005
"""
from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")

revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('uploaded_models',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('owner', sa.String(length=255), nullable=False),
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.Column('stored_name', sa.String(length=64), nullable=False),
    sa.Column('size_bytes', sa.BigInteger(), nullable=False),
    sa.Column('sha256', sa.String(length=64), nullable=False),
    sa.Column('spec', JSON, nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('uploaded_models', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_uploaded_models_owner'), ['owner'], unique=False)
    with op.batch_alter_table('audits', schema=None) as batch_op:
        batch_op.alter_column('job_id', existing_type=sa.String(length=32), nullable=True)
        batch_op.add_column(sa.Column('model_artifact_id', sa.String(length=32), nullable=True))
        batch_op.create_index(batch_op.f('ix_audits_model_artifact_id'), ['model_artifact_id'], unique=False)
        batch_op.create_foreign_key('fk_audits_model_artifact_id', 'uploaded_models', ['model_artifact_id'], ['id'],
                                    ondelete='CASCADE')


def downgrade() -> None:
    with op.batch_alter_table('audits', schema=None) as batch_op:
        batch_op.drop_constraint('fk_audits_model_artifact_id', type_='foreignkey')
        batch_op.drop_index(batch_op.f('ix_audits_model_artifact_id'))
        batch_op.drop_column('model_artifact_id')
    op.execute("DELETE FROM audits WHERE job_id IS NULL")
    with op.batch_alter_table('audits', schema=None) as batch_op:
        batch_op.alter_column('job_id', existing_type=sa.String(length=32), nullable=False)
    with op.batch_alter_table('uploaded_models', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_uploaded_models_owner'))
    op.drop_table('uploaded_models')
