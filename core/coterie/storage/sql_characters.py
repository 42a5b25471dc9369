"""The SQL store's character reads outside a transaction (:class:`coterie.storage.sql.SQLStore`
mixes this in): on SQLite one statement on a reading connection, on PostgreSQL the active
character through the store's read cache (kept true by the commits' notices, like ``kv`` values).
Writes, and the other reads on PostgreSQL, are transactions of their own
(:class:`~coterie.storage.character_rows.ThroughTransactions`)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from coterie.storage.character_rows import Character, ThroughTransactions
from coterie.storage.postgres import SELECT_ACTIVE, active_character, active_key
from coterie.storage.rows import T
from coterie.storage.sqlite import lite_active, lite_changes, lite_characters


class SQLCharacterReads(ThroughTransactions):
    path: Path | None

    async def _read(self, work: Callable[[sqlite3.Connection], T]) -> T:
        raise NotImplementedError

    async def _cached(self, wanted: tuple[str, str], query: str, *args: Any) -> str | None:
        raise NotImplementedError

    async def active_character(
        self, chronicle: str, owner: str, *, readonly: bool = False
    ) -> Character | None:
        if self.path is not None:
            return await self._read(lambda db: lite_active(db, chronicle, owner, readonly))
        value = await self._cached(active_key(chronicle, owner), SELECT_ACTIVE, chronicle, owner)
        return active_character(owner, value, readonly)

    async def characters(self, chronicle: str, owner: str | None = None) -> list[Character]:
        if self.path is not None:
            return await self._read(lambda db: lite_characters(db, chronicle, owner))
        return await super().characters(chronicle, owner)

    async def changes(self, chronicle: str, author: str) -> list[dict[str, Any]]:
        if self.path is not None:
            return await self._read(lambda db: lite_changes(db, chronicle, author))
        return await super().changes(chronicle, author)
