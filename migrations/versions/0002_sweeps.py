"""sweeps, job sweep membership, warm start, heartbeat

Revision ID: 0002
Revises: 0001
"""
from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")

revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('sweeps',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('dataset_id', sa.String(length=32), nullable=False),
    sa.Column('spec', JSON, nullable=False),
    sa.Column('n_jobs', sa.Integer(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['dataset_id'], ['datasets.id'], ondelete='RESTRICT'),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('sweeps', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_sweeps_dataset_id'), ['dataset_id'], unique=False)

    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('sweep_id', sa.String(length=32), nullable=True))
        batch_op.add_column(sa.Column('sweep_point', JSON, nullable=True))
        batch_op.add_column(sa.Column('warm_start_from', sa.String(length=32), nullable=True))
        batch_op.add_column(sa.Column('heartbeat_at', sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column('starts', sa.Integer(), nullable=False, server_default="0"))
        batch_op.create_index(batch_op.f('ix_jobs_sweep_id'), ['sweep_id'], unique=False)
        batch_op.create_foreign_key('fk_jobs_sweep_id_sweeps', 'sweeps', ['sweep_id'], ['id'], ondelete='CASCADE')



def downgrade() -> None:
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.drop_constraint('fk_jobs_sweep_id_sweeps', type_='foreignkey')
        batch_op.drop_index(batch_op.f('ix_jobs_sweep_id'))
        batch_op.drop_column('starts')
        batch_op.drop_column('heartbeat_at')
        batch_op.drop_column('warm_start_from')
        batch_op.drop_column('sweep_point')
        batch_op.drop_column('sweep_id')

    with op.batch_alter_table('sweeps', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_sweeps_dataset_id'))

    op.drop_table('sweeps')
