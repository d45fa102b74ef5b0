"""tenants: API keys, an owner on every dataset, sweep and job, idempotency records

Rows that predate tenancy are given to the owner ``admin`` (the bootstrap key's default owner).

Revision ID: 0003
Revises: 0002
"""
from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")

revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None

OWNED = ('datasets', 'sweeps', 'jobs')


def upgrade() -> None:
    op.create_table('api_keys',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('owner', sa.String(length=255), nullable=False),
    sa.Column('key_hash', sa.String(length=64), nullable=False),
    sa.Column('hint', sa.String(length=16), nullable=False),
    sa.Column('admin', sa.Boolean(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('revoked_at', sa.DateTime(timezone=True), nullable=True),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('key_hash')
    )
    with op.batch_alter_table('api_keys', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_api_keys_owner'), ['owner'], unique=False)
    op.create_table('idempotency_records',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('owner', sa.String(length=255), nullable=False),
    sa.Column('key', sa.String(length=255), nullable=False),
    sa.Column('route', sa.String(length=64), nullable=False),
    sa.Column('request_sha256', sa.String(length=64), nullable=False),
    sa.Column('status_code', sa.Integer(), nullable=False),
    sa.Column('response', JSON, nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('owner', 'key', name='uq_idempotency_owner_key')
    )
    for table in OWNED:
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.add_column(sa.Column('owner', sa.String(length=255), nullable=False, server_default='admin'))
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.alter_column('owner', server_default=None)
            batch_op.create_index(batch_op.f(f'ix_{table}_owner'), ['owner'], unique=False)


def downgrade() -> None:
    for table in OWNED:
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_index(batch_op.f(f'ix_{table}_owner'))
            batch_op.drop_column('owner')
    op.drop_table('idempotency_records')
    with op.batch_alter_table('api_keys', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_api_keys_owner'))
    op.drop_table('api_keys')
