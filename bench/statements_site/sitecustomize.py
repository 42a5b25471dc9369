"""Loaded by Python at start-up in the processes ``bench/sqlite_statements.py`` runs (this folder
is put on their ``PYTHONPATH``), active only where ``COTERIE_STATEMENTS_OUT`` names a folder.

Every :func:`sqlite3.connect` then makes a :class:`Timed` connection: each ``execute`` is timed,
wall and CPU of the calling thread, and filed under its kind (:func:`kind`); at exit the
process writes them to ``statements.<pid>.json`` in that folder. Once, just before the first WAL
checkpoint, or the close of a connection that committed through ``execute`` (the store's own;
the last close copies the WAL into the database file), the database and its WAL are copied to
``wal-copy/`` there, so that the frames of every commit until then can be read (Alembic's
connection, at start-up, commits through a cursor: its close does not count)."""

from __future__ import annotations

import atexit
import json
import os
import re
import shutil
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

OUT = os.environ.get("COTERIE_STATEMENTS_OUT")

#: statement kind → [wall seconds, CPU seconds] of each execution
timings: dict[str, list[tuple[float, float]]] = {}
_copied = threading.Lock()
_copy_done = False


def kind(sql: str) -> str:
    """What a statement is, without its values: ``INSERT INTO kv``, ``SELECT FROM kv``,
    ``PRAGMA data_version``, ``COMMIT``..."""
    words = sql.split()
    if not words:
        return "(empty)"
    first = words[0].upper()
    if first in ("INSERT", "REPLACE", "DELETE") and len(words) > 2:
        return f"{first} {words[1].upper()} {words[2]}"
    if first == "UPDATE" and len(words) > 1:
        return f"UPDATE {words[1]}"
    if first == "SELECT":
        table = re.search(r"\bFROM\s+(\w+)", sql, re.I)
        return f"SELECT FROM {table.group(1)}" if table else "SELECT"
    if first == "PRAGMA" and len(words) > 1:
        return "PRAGMA " + re.split(r"\s*=", " ".join(words[1:]))[0]
    return first


def copy_aside(db: sqlite3.Connection) -> None:
    """Copy the connection's database file and its WAL to ``wal-copy/``, once per process."""
    global _copy_done
    with _copied:
        if _copy_done or OUT is None:
            return
        _copy_done = True
        rows = sqlite3.Connection.execute(db, "PRAGMA database_list").fetchall()
        path = Path(rows[0][2]) if rows and rows[0][2] else None
        if path is None or not Path(f"{path}-wal").exists():
            return
        target = Path(OUT) / "wal-copy"
        target.mkdir(exist_ok=True)
        shutil.copy(path, target / "coterie.db")
        shutil.copy(f"{path}-wal", target / "coterie.db-wal")


class Timed(sqlite3.Connection):
    """A connection that times each ``execute`` (see the module)."""

    committed = False

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        if "wal_checkpoint" in sql:
            copy_aside(self)
        name = kind(sql)
        if name == "COMMIT":
            self.committed = True
        if threading.current_thread() is not threading.main_thread():
            name += f" (thread {threading.current_thread().name.split('_')[0]})"
        wall, cpu = time.perf_counter(), time.thread_time()
        try:
            return super().execute(sql, *args)
        finally:
            timings.setdefault(name, []).append(
                (time.perf_counter() - wall, time.thread_time() - cpu)
            )

    def close(self) -> None:
        if self.committed:
            copy_aside(self)
        super().close()


def _write() -> None:
    if timings and OUT is not None:
        with open(Path(OUT) / f"statements.{os.getpid()}.json", "w", encoding="utf-8") as out:
            json.dump(timings, out)


if OUT:
    _connect = sqlite3.connect

    def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        kwargs.setdefault("factory", Timed)
        db: sqlite3.Connection = _connect(*args, **kwargs)
        return db

    sqlite3.connect = connect  # type: ignore[assignment]
    atexit.register(_write)
