"""The initial schema: the key-value table and the roll log.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision: str | None = None
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "kv",
        sa.Column("namespace", sa.Text, nullable=False),
        sa.Column("key", sa.Text, nullable=False),
        sa.Column("value", sa.Text, nullable=False),
        sa.Column("updated_at", sa.Double, nullable=False),
        sa.PrimaryKeyConstraint("namespace", "key", name="pk_kv"),
    )
    op.create_table(
        "rolls",
        sa.Column(
            "seq",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            primary_key=True,
            autoincrement=True,
        ),
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("room", sa.Text, nullable=False),
        sa.Column("user", sa.Text, nullable=False),
        sa.Column("display_name", sa.Text, nullable=False),
        sa.Column("variant", sa.Text, nullable=False),
        sa.Column("request", sa.Text, nullable=False),
        sa.Column("faces", sa.Text, nullable=False),
        sa.Column("outcome", sa.Text, nullable=False),
        sa.Column("successes", sa.Integer, nullable=False),
        sa.Column("botch", sa.Boolean, nullable=False),
        sa.Column("expected", sa.Double, nullable=True),
        sa.Column("session", sa.Text, nullable=True),
        sa.Column("time", sa.Double, nullable=False),
        sa.Column("detail", sa.Text, nullable=False),
        sa.UniqueConstraint("id", name="uq_rolls_id"),
    )
    op.create_index("ix_rolls_room_seq", "rolls", ["room", "seq"])


def downgrade() -> None:
    op.drop_index("ix_rolls_room_seq", table_name="rolls")
    op.drop_table("rolls")
    op.drop_table("kv")
