"""Characters in tables of their own (#17): ``characters`` (one row per sheet, the active one
marked) and ``character_changes`` (the ``!undo`` stacks), with the sheets and stacks kept until
now in the key-value table (namespaces ``coterie.characters`` and
``coterie.character_changes``) moved into them; the downgrade moves them back.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-25
"""

from __future__ import annotations

import json
import time
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision: str | None = "0001"
branch_labels: str | None = None
depends_on: str | None = None

#: the key-value namespaces of revision 0001 (values keyed ``CHRONICLE|USER``)
OLD_CHARACTERS = "coterie.characters"
OLD_CHANGES = "coterie.character_changes"

_kv = sa.table(
    "kv",
    sa.column("namespace", sa.Text),
    sa.column("key", sa.Text),
    sa.column("value", sa.Text),
    sa.column("updated_at", sa.Double),
)
_characters = sa.table(
    "characters",
    sa.column("chronicle", sa.Text),
    sa.column("owner", sa.Text),
    sa.column("key", sa.Text),
    sa.column("sheet", sa.Text),
    sa.column("active", sa.Boolean),
    sa.column("updated_at", sa.Double),
)
_changes = sa.table(
    "character_changes",
    sa.column("seq", sa.Integer),
    sa.column("chronicle", sa.Text),
    sa.column("author", sa.Text),
    sa.column("change", sa.Text),
)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def _split(key: str) -> tuple[str, str]:
    # ``CHRONICLE|USER``: a room key may hold ``|``, a user id does not
    chronicle, _, user = key.rpartition("|")
    return chronicle, user


def upgrade() -> None:
    op.create_table(
        "characters",
        sa.Column("chronicle", sa.Text, nullable=False),
        sa.Column("owner", sa.Text, nullable=False),
        sa.Column("key", sa.Text, nullable=False),
        sa.Column("sheet", sa.Text, nullable=False),
        sa.Column("active", sa.Boolean, nullable=False),
        sa.Column("updated_at", sa.Double, nullable=False),
        sa.PrimaryKeyConstraint("chronicle", "owner", "key", name="pk_characters"),
    )
    op.create_table(
        "character_changes",
        sa.Column(
            "seq",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            primary_key=True,
            autoincrement=True,
        ),
        sa.Column("chronicle", sa.Text, nullable=False),
        sa.Column("author", sa.Text, nullable=False),
        sa.Column("change", sa.Text, nullable=False),
    )
    op.create_index(
        "ix_character_changes_author", "character_changes", ["chronicle", "author", "seq"]
    )
    bind = op.get_bind()
    found = bind.execute(
        sa.select(_kv.c.namespace, _kv.c.key, _kv.c.value, _kv.c.updated_at)
        .where(_kv.c.namespace.in_([OLD_CHARACTERS, OLD_CHANGES]))
        .order_by(_kv.c.namespace, _kv.c.key)
    ).all()
    sheets: list[dict[str, Any]] = []
    changes: list[dict[str, Any]] = []
    for namespace, key, value, updated_at in found:
        chronicle, user = _split(key)
        data = json.loads(value)
        if namespace == OLD_CHARACTERS and isinstance(data, dict):
            active = data.get("active")
            for name_key, sheet in (data.get("chars") or {}).items():
                sheets.append(
                    {
                        "chronicle": chronicle,
                        "owner": user,
                        "key": name_key,
                        "sheet": _dumps(sheet),
                        "active": name_key == active,
                        "updated_at": updated_at,
                    }
                )
        elif namespace == OLD_CHANGES and isinstance(data, list):
            for change in data:  # oldest first: the order of ``seq``
                changes.append({"chronicle": chronicle, "author": user, "change": _dumps(change)})
    if sheets:
        bind.execute(_characters.insert(), sheets)
    for row in changes:  # one by one: ``seq`` follows the stack's order
        bind.execute(_changes.insert().values(**row))
    bind.execute(_kv.delete().where(_kv.c.namespace.in_([OLD_CHARACTERS, OLD_CHANGES])))


def downgrade() -> None:
    bind = op.get_bind()
    players: dict[tuple[str, str], dict[str, Any]] = {}
    stamps: dict[tuple[str, str], float] = {}
    for chronicle, owner, key, sheet, active, updated_at in bind.execute(
        sa.select(
            _characters.c.chronicle,
            _characters.c.owner,
            _characters.c.key,
            _characters.c.sheet,
            _characters.c.active,
            _characters.c.updated_at,
        ).order_by(_characters.c.chronicle, _characters.c.owner, _characters.c.key)
    ):
        record = players.setdefault((chronicle, owner), {"active": None, "chars": {}})
        record["chars"][key] = json.loads(sheet)
        if active:
            record["active"] = key
        stamps[(chronicle, owner)] = max(stamps.get((chronicle, owner), 0.0), updated_at)
    stacks: dict[tuple[str, str], list[Any]] = {}
    for chronicle, author, change in bind.execute(
        sa.select(_changes.c.chronicle, _changes.c.author, _changes.c.change).order_by(
            _changes.c.seq
        )
    ):
        stacks.setdefault((chronicle, author), []).append(json.loads(change))
    now = time.time()
    rows = [
        {
            "namespace": OLD_CHARACTERS,
            "key": f"{chronicle}|{owner}",
            "value": _dumps(record),
            "updated_at": stamps[(chronicle, owner)],
        }
        for (chronicle, owner), record in players.items()
    ] + [
        {
            "namespace": OLD_CHANGES,
            "key": f"{chronicle}|{author}",
            "value": _dumps(stack),
            "updated_at": now,
        }
        for (chronicle, author), stack in stacks.items()
    ]
    if rows:
        bind.execute(_kv.delete().where(_kv.c.namespace.in_([OLD_CHARACTERS, OLD_CHANGES])))
        bind.execute(_kv.insert(), rows)
    op.drop_index("ix_character_changes_author", table_name="character_changes")
    op.drop_table("character_changes")
    op.drop_table("characters")
