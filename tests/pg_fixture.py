"""pytest plugin (registered in ``conftest.py``): the state stores of the tests.

* ``postgres`` is the session-wide throwaway PostgreSQL (:class:`pg.Postgres`, started on first
  use); ``pg_url`` a fresh, empty database on it for one test. Missing server binaries make these
  fixtures fail, not skip: the PostgreSQL path is part of ``make test``.
* Every test starts with ``COTERIE_DATABASE_URL=memory://`` (autouse), inherited by the CLI
  subprocesses it starts: ``coterie chat``/``run`` in a test never writes a database under the
  repository's ``data_dir`` that a later test (or run) would read. A test of persistence sets
  the variable itself (``monkeypatch.setenv(DATABASE_URL_ENV, url)``) or removes it.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest

from coterie.framework.config import DATABASE_URL_ENV
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
