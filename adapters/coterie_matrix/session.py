"""What the Matrix adapter remembers between runs, so that a restart neither replays history nor
answers a command twice.

* :class:`Session`: the bot's device id (its encryption keys belong to it) and the sync token
  (``next_batch``: where the event stream resumes). Both live in the app's state store
  (namespace ``matrix.session``, updated after every sync) and, when there is a store
  directory, in ``coterie-session.json`` next to matrix-nio's key store: the state store is in
  memory in this release, the file lets a new *process* find the device its keys belong to and
  resume the stream. The file is replaced atomically, at once when the device changes, else at
  most every :data:`FILE_SECONDS` and on shutdown (a token a few seconds old after a crash only
  means re-reading those seconds: answers already sent are not sent again, see
  :mod:`coterie_matrix.bot`).
* :class:`RecentRecords`: a bounded map in the state store: the ids of events already answered
  (namespace ``matrix.answered``) and the reaction buttons of recent replies
  (``matrix.buttons``). At most ``size`` entries; the oldest are forgotten first.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coterie.storage.state import StateStore

log = logging.getLogger("coterie.matrix")

SESSION = "matrix.session"
SESSION_FILE = "coterie-session.json"
#: the session file is rewritten with a new sync token at most this often
FILE_SECONDS = 5.0


@dataclass(frozen=True)
class SessionData:
    device_id: str | None = None
    next_batch: str | None = None


class Session:
    """The device id and sync token of ``user_id``, in ``store`` and in ``directory``."""

    def __init__(self, store: StateStore, user_id: str, directory: Path | None = None) -> None:
        self._store = store
        self.user_id = user_id
        self.directory = directory
        self._data = SessionData()
        self._written: SessionData | None = None
        self._written_at = 0.0

    @property
    def path(self) -> Path | None:
        return None if self.directory is None else self.directory / SESSION_FILE

    async def load(self) -> SessionData:
        """What the state store holds, else what the session file holds, else nothing."""
        stored = await self._store.get(SESSION, self.user_id)
        if not isinstance(stored, dict):
            stored = self._read_file()
        self._data = SessionData(
            device_id=_text(stored.get("device_id")), next_batch=_text(stored.get("next_batch"))
        )
        return self._data

    def _read_file(self) -> dict[str, Any]:
        path = self.path
        if path is None or not path.exists():
            return {}
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            log.warning("cannot read %s (%s): starting a new session", path, error)
            return {}
        if not isinstance(data, dict) or data.get("user_id") != self.user_id:
            log.warning("%s belongs to another account: starting a new session", path)
            return {}
        return data

    async def save(self, *, device_id: str | None = None, next_batch: str | None = None) -> None:
        """Remember a new device id and/or sync token (``None`` keeps the current one)."""
        data = SessionData(
            device_id=device_id or self._data.device_id,
            next_batch=next_batch or self._data.next_batch,
        )
        if data == self._data:
            return
        self._data = data
        await self._store.set(SESSION, self.user_id, self._record(data))
        written = self._written
        if (
            written is None
            or written.device_id != data.device_id
            or time.monotonic() - self._written_at >= FILE_SECONDS
        ):
            self.flush()

    def flush(self) -> None:
        """Write the session file now (if there is a store directory and anything new)."""
        if self.path is None or self._written == self._data:
            return
        # a few hundred bytes, no fsync: quick enough for the event loop (a thread would make
        # the loop wait for the GIL while replies are being sent)
        _write_atomically(self.path, {"user_id": self.user_id, **self._record(self._data)})
        self._written, self._written_at = self._data, time.monotonic()

    @staticmethod
    def _record(data: SessionData) -> dict[str, str | None]:
        return {"device_id": data.device_id, "next_batch": data.next_batch}

    async def forget_device(self) -> None:
        """Start afresh: a new device (its key store was lost) reads the stream from now on."""
        self._data = SessionData()
        self._written = None
        await self._store.delete(SESSION, self.user_id)
        if self.path is not None:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _write_atomically(path: Path, data: dict[str, Any]) -> None:
    """Write JSON so that a crash leaves either the old file or the new one, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=".session-", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(data, out)
        os.chmod(temporary, 0o600)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


class RecentRecords:
    """A bounded key → JSON value map in a state store namespace.

    Entries sit in a ring of ``size`` slots: adding one past the end overwrites (and deletes) the
    oldest. Every operation touches a few small keys, never the whole map."""

    def __init__(self, store: StateStore, namespace: str, size: int) -> None:
        if size < 1:
            raise ValueError("size must be at least 1")
        self._store = store
        self._namespace = namespace
        self.size = size
        self._next: int | None = None
        self._lock = asyncio.Lock()

    async def get(self, key: str) -> Any | None:
        return await self._store.get(self._namespace, f"id:{key}")

    async def contains(self, key: str) -> bool:
        return await self.get(key) is not None

    async def put(self, key: str, value: Any) -> None:
        """Store ``value`` under ``key`` (a new key takes the oldest slot)."""
        async with self._lock:
            if await self.get(key) is not None:
                await self._store.set(self._namespace, f"id:{key}", value)
                return
            if self._next is None:
                stored = await self._store.get(self._namespace, "next")
                self._next = stored if isinstance(stored, int) else 0
            slot = f"slot:{self._next % self.size}"
            old = await self._store.get(self._namespace, slot)
            if isinstance(old, str):
                await self._store.delete(self._namespace, f"id:{old}")
            await self._store.set(self._namespace, slot, key)
            await self._store.set(self._namespace, f"id:{key}", value)
            self._next += 1
            await self._store.set(self._namespace, "next", self._next)
