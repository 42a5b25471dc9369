"""The roll log loses its unique index on ``id`` (issue 18): nothing looks a roll up by its id in
SQL (``!log ID`` and ``!reveal`` match the shown symbols among a room's rolls, which the
``(room, seq)`` index finds), and ids carry 65 random bits, so the index only served to refuse a
repeat that does not happen in practice — at the price of one more B-tree page written per roll,
on a random leaf (on SQLite, two more writes to the WAL for every roll committed).

On SQLite the table is copied without the constraint (Alembic's batch mode; the rows, their
``seq`` and the ``(room, seq)`` index are kept). The downgrade puts the constraint back; it
fails if two logged rolls share an id meanwhile.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-26
"""

from __future__ import annotations

from alembic import op

revision = "0003"
down_revision: str | None = "0002"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    with op.batch_alter_table("rolls") as batch:
        batch.drop_constraint("uq_rolls_id", type_="unique")


def downgrade() -> None:
    with op.batch_alter_table("rolls") as batch:
        batch.create_unique_constraint("uq_rolls_id", ["id"])
