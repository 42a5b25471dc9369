"""Alembic's environment for coterie's schema.

coterie runs it programmatically (:func:`coterie.storage.migrate.upgrade`), handing over a
synchronous connection of its async engine in ``config.attributes["connection"]`` (through
``run_sync``). Without one (e.g. ``alembic`` run by hand with ``sqlalchemy.url`` set), it opens an
async engine for that URL itself.
"""

from __future__ import annotations

import asyncio

from alembic import context
from sqlalchemy.engine import Connection

from coterie.storage.engine import create_engine, tables

metadata = tables().metadata

config = context.config


def run_with(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()


async def run_async(url: str) -> None:
    engine = create_engine(url)
    try:
        async with engine.begin() as conn:
            await conn.run_sync(run_with)
    finally:
        await engine.dispose()


if context.is_offline_mode():
    context.configure(
        url=config.get_main_option("sqlalchemy.url"),
        target_metadata=metadata,
        literal_binds=True,
    )
    with context.begin_transaction():
        context.run_migrations()
else:
    handed = config.attributes.get("connection")
    if handed is not None:
        run_with(handed)
    else:
        asyncio.run(run_async(str(config.get_main_option("sqlalchemy.url"))))
