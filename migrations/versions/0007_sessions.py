"""dashboard sessions: the cookie holds a session id (hashed here) mapped to an API key, never the key

Revision ID: 0007_sessions
Revises: 0006
"""
from alembic import op
import sqlalchemy as sa

revision = '0007_sessions'
down_revision = '0006'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('dashboard_sessions',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('token_hash', sa.String(length=64), nullable=False),
    sa.Column('key_id', sa.String(length=32), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('expires_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('revoked_at', sa.DateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['key_id'], ['api_keys.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('token_hash')
    )
    with op.batch_alter_table('dashboard_sessions', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_dashboard_sessions_key_id'), ['key_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('dashboard_sessions', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_dashboard_sessions_key_id'))
    op.drop_table('dashboard_sessions')
