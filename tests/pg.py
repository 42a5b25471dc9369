"""A throwaway PostgreSQL server for the tests (Debian's server binaries; ``make postgres``
installs them).

:func:`running_postgres` runs ``initdb`` in a temporary directory, starts the server on
127.0.0.1 on a free port (its unix socket in the same directory, fsync off), creates a database
and yields a :class:`Postgres`; at the end the server is stopped and the directory removed.
PostgreSQL refuses to run as root: when the tests run as root, the server runs as the
``postgres`` system user (``runuser``) and the directory belongs to it.
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

#: where Debian's postgresql-NN packages put the server binaries
DEBIAN_BINARIES = "/usr/lib/postgresql/*/bin"
SYSTEM_USER = "postgres"
DB_USER = "coterie"
DB_NAME = "coterie_test"


class PostgresMissing(RuntimeError):
    """The PostgreSQL server binaries are not installed."""


@dataclass(frozen=True)
class Postgres:
    """A running throwaway server."""

    host: str
    port: int
    user: str
    database: str
    bindir: Path
    #: seconds from initdb to an accepting server with the database created
    startup: float

    def url(self, database: str | None = None) -> str:
        """The asyncpg URL (no password: the cluster trusts local connections)."""
        return (
            f"postgresql+asyncpg://{self.user}@{self.host}:{self.port}/{database or self.database}"
        )

    def createdb(self, name: str) -> str:
        """Create another database on the server; its URL."""
        subprocess.run(
            [str(self.bindir / "createdb"), *self._client_args(), name],
            check=True,
            capture_output=True,
            timeout=30,
        )
        return self.url(name)

    def _client_args(self) -> list[str]:
        return ["-h", self.host, "-p", str(self.port), "-U", self.user]


def find_bindir() -> Path:
    """The directory of ``initdb``/``pg_ctl`` (the newest Debian version, else ``$PATH``)."""
    found = sorted(
        glob.glob(f"{DEBIAN_BINARIES}/initdb"),
        key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0,
    )
    if found:
        return Path(found[-1]).parent
    on_path = shutil.which("initdb")
    if on_path:
        return Path(on_path).parent
    raise PostgresMissing(
        "the PostgreSQL server binaries (initdb, pg_ctl) are not installed: run `make postgres` "
        "(Debian: apt-get install postgresql) — the PostgreSQL store tests need a real server"
    )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _as_server_user(argv: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return argv
    if shutil.which("runuser") is None:  # pragma: no cover - util-linux is always there
        raise PostgresMissing("running as root needs runuser to start PostgreSQL as postgres")
    return ["runuser", "-u", SYSTEM_USER, "--", *argv]


def _run(argv: list[str], what: str, timeout: float = 60) -> None:
    done = subprocess.run(
        _as_server_user(argv), capture_output=True, text=True, timeout=timeout, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"{what} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")


@contextmanager
def running_postgres() -> Iterator[Postgres]:
    """Start a throwaway server (see the module's docstring); stop and remove it at the end."""
    bindir = find_bindir()
    began = time.perf_counter()
    root = Path(tempfile.mkdtemp(prefix="coterie-pg-"))
    data = root / "data"
    if os.geteuid() == 0:
        try:
            shutil.chown(root, SYSTEM_USER, SYSTEM_USER)
        except (LookupError, PermissionError) as error:
            shutil.rmtree(root, ignore_errors=True)
            raise PostgresMissing(
                f"running as root, PostgreSQL must run as the {SYSTEM_USER!r} system user, "
                f"which is missing ({error}); install Debian's postgresql package"
            ) from None
    port = _free_port()
    ctl = str(bindir / "pg_ctl")
    started = False
    try:
        _run(
            [
                str(bindir / "initdb"),
                "-D",
                str(data),
                "-U",
                DB_USER,
                "--auth=trust",
                "--encoding=UTF8",
                "--locale=C",
                "--no-sync",
                "--no-instructions",
            ],
            "initdb",
        )
        options = (
            f"-c listen_addresses=127.0.0.1 -p {port} -k {root} -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
        )
        _run(
            [ctl, "-D", str(data), "-l", str(root / "server.log"), "-o", options, "-w", "start"],
            "pg_ctl start",
        )
        started = True
        server = Postgres("127.0.0.1", port, DB_USER, DB_NAME, bindir, 0.0)
        subprocess.run(
            [str(bindir / "createdb"), *server._client_args(), DB_NAME],
            check=True,
            capture_output=True,
            timeout=30,
        )
        yield Postgres("127.0.0.1", port, DB_USER, DB_NAME, bindir, time.perf_counter() - began)
    finally:
        if started:
            try:
                _run([ctl, "-D", str(data), "-m", "immediate", "-w", "stop"], "pg_ctl stop", 30)
            except (RuntimeError, subprocess.TimeoutExpired):
                _kill_postmaster(data)
        shutil.rmtree(root, ignore_errors=True)


def _kill_postmaster(data: Path) -> None:
    try:
        pid = int((data / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return
    with suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
