"""pytest plugin (registered in ``conftest.py``): the state stores of the tests.

* ``postgres`` is the session-wide throwaway PostgreSQL (:class:`pg.Postgres`, started on first
  use); ``pg_url`` a fresh, empty database on it for one test. Missing server binaries make these
  fixtures fail, not skip: the PostgreSQL path is part of ``make test``.
* ``migrated_store`` is each kind of store in turn (memory, SQLite, PostgreSQL), the SQL ones
  migrated to the newest schema; a test module takes it as its ``store``.
* ``pg_trips`` counts PostgreSQL round trips: every asyncpg ``fetch``/``fetchval``/``fetchrow``/
  ``execute`` call of the test, each one round trip (``pg_trips["n"]``).
* Every test starts with ``COTERIE_DATABASE_URL=memory://`` (autouse), inherited by the CLI
  subprocesses it starts: ``coterie chat``/``run`` in a test never writes a database under the
  repository's ``data_dir`` that a later test (or run) would read. A test of persistence sets
  the variable itself (``monkeypatch.setenv(DATABASE_URL_ENV, url)``) or removes it.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from coterie.framework.config import DATABASE_URL_ENV
from coterie.storage.migrate import upgrade
from coterie.storage.sql import SQLStore
from coterie.storage.state import MemoryStore, StateStore
from pg import Postgres, PostgresMissing, running_postgres

_numbers = itertools.count(1)


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    try:
        with running_postgres() as server:
            yield server
    except PostgresMissing as error:
        pytest.fail(str(error), pytrace=False)


@pytest.fixture
def pg_url(postgres: Postgres) -> str:
    """The URL of a new empty database (each test gets its own)."""
    return postgres.createdb(f"coterie_t{next(_numbers)}")


@pytest.fixture(autouse=True)
def _state_in_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DATABASE_URL_ENV, "memory://")


@pytest.fixture(params=["memory", "sqlite", "postgresql"])
async def migrated_store(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[StateStore]:
    """Each kind of store in turn, the SQL ones at the newest schema."""
    made: StateStore
    if request.param == "memory":
        made = MemoryStore()
    else:
        url = (
            f"sqlite+aiosqlite:///{tmp_path / 'state.db'}"
            if request.param == "sqlite"
            else request.getfixturevalue("pg_url")
        )
        await upgrade(url)
        made = SQLStore(url)
    yield made
    await made.close()


@pytest.fixture
def pg_trips(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """asyncpg calls from now on, each one round trip: ``pg_trips["n"]``."""
    from asyncpg.connection import Connection  # type: ignore[import-untyped]

    counted = {"n": 0}
    for name in ("fetch", "fetchval", "fetchrow", "execute"):
        real = getattr(Connection, name)

        async def call(self: Any, *args: Any, real: Any = real, **kwargs: Any) -> Any:
            counted["n"] += 1
            return await real(self, *args, **kwargs)

        monkeypatch.setattr(Connection, name, call)
    return counted
