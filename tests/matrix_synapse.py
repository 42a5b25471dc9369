"""A real Synapse homeserver for the Matrix tests and the latency benchmark, on 127.0.0.1 only.

:class:`Synapse` writes a complete homeserver config into a temporary directory (SQLite, one
client listener on a free loopback port, open registration without verification, a registration
shared secret, no federation listener and ``federation_domain_whitelist: []``, no trusted key
servers, no stats, rate limits raised, media store and signing key in the directory), starts
``.venv-synapse/bin/python -m synapse.app.homeserver`` and waits until the client API answers.
:meth:`Synapse.restart` stops it and starts it again on the same port with the same data (the
"homeserver went away" test). :meth:`Synapse.register` creates a fresh user through the shared
secret admin API and returns its access token and device id.

Everything here is synchronous (subprocess + urllib), so a module-scoped pytest fixture and the
benchmark can both use it; async code calls the slow parts through ``asyncio.to_thread``.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
#: the homeserver's own virtualenv, installed by ``make test`` (``make peers``)
SYNAPSE_PYTHON = ROOT / ".venv-synapse" / "bin" / "python"
LOOPBACK = "127.0.0.1"
SERVER_NAME = "coterie.test"
#: how long a start may take before the test fails (it usually takes about 2 s)
START_SECONDS = 60.0
STOP_SECONDS = 15.0

#: every ``rc_*`` limit a test could hit, raised far out of reach
RATE_LIMITS: dict[str, Any] = {
    "rc_message": {"per_second": 10_000, "burst_count": 100_000},
    "rc_registration": {"per_second": 10_000, "burst_count": 100_000},
    "rc_registration_token_validity": {"per_second": 10_000, "burst_count": 100_000},
    "rc_login": {
        "address": {"per_second": 10_000, "burst_count": 100_000},
        "account": {"per_second": 10_000, "burst_count": 100_000},
        "failed_attempts": {"per_second": 10_000, "burst_count": 100_000},
    },
    "rc_admin_redaction": {"per_second": 10_000, "burst_count": 100_000},
    "rc_joins": {
        "local": {"per_second": 10_000, "burst_count": 100_000},
        "remote": {"per_second": 10_000, "burst_count": 100_000},
    },
    "rc_joins_per_room": {"per_second": 10_000, "burst_count": 100_000},
    "rc_key_requests": {"per_second": 10_000, "burst_count": 100_000},
    "rc_invites": {
        "per_room": {"per_second": 10_000, "burst_count": 100_000},
        "per_user": {"per_second": 10_000, "burst_count": 100_000},
        "per_issuer": {"per_second": 10_000, "burst_count": 100_000},
    },
    "rc_media_create": {"per_second": 10_000, "burst_count": 100_000},
    "rc_room_creation": {"per_second": 10_000, "burst_count": 100_000},
    "rc_presence": {"per_user": {"per_second": 10_000, "burst_count": 100_000}},
    "rc_delayed_event_mgmt": {"per_second": 10_000, "burst_count": 100_000},
    "rc_reports": {"per_second": 10_000, "burst_count": 100_000},
    "rc_profile": {"per_second": 10_000, "burst_count": 100_000},
}


class SynapseError(RuntimeError):
    """Synapse did not start, stop or answer as expected; the message has its log's tail, or the
    HTTP status and the JSON body of the refused request."""

    def __init__(
        self, message: str, *, status: int | None = None, body: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.body = body or {}


@dataclass(frozen=True)
class Account:
    """A registered user with a logged-in device."""

    user_id: str
    password: str
    access_token: str
    device_id: str

    @property
    def localpart(self) -> str:
        return self.user_id[1:].split(":", 1)[0]


def synapse_version() -> str:
    """The installed matrix-synapse version (from its virtualenv's package metadata)."""
    found = sorted(SYNAPSE_PYTHON.parent.parent.glob("lib/python*/site-packages/matrix_synapse-*"))
    if not found:
        return "?"
    return found[0].name.removeprefix("matrix_synapse-").removesuffix(".dist-info")


def free_port() -> int:
    """A TCP port nobody listens on at the moment, on the loopback interface."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((LOOPBACK, 0))
        return int(probe.getsockname()[1])


def signing_key() -> str:
    """A fresh ed25519 signing key in Synapse's key file format (any 32 bytes are a seed)."""
    seed = base64.b64encode(secrets.token_bytes(32)).decode().rstrip("=")
    return f"ed25519 a_{secrets.token_hex(2)} {seed}\n"


class Synapse:
    """One homeserver process with its data in ``directory`` (a fresh temporary one by default)."""

    def __init__(self, directory: Path | None = None, *, port: int | None = None) -> None:
        self._own_directory = directory is None
        self.directory = Path(directory or tempfile.mkdtemp(prefix="coterie-synapse-"))
        self.port = port or free_port()
        self.shared_secret = secrets.token_hex(24)
        self.process: subprocess.Popen[bytes] | None = None
        self._output: Any = None
        self._write_config()

    # --- configuration ------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    @property
    def config_path(self) -> Path:
        return self.directory / "homeserver.yaml"

    @property
    def log_path(self) -> Path:
        return self.directory / "homeserver.log"

    def _write_config(self) -> None:
        data = self.directory
        (data / "signing.key").write_text(signing_key(), encoding="utf-8")
        (data / "log.yaml").write_text(
            json.dumps(
                {
                    "version": 1,
                    "formatters": {
                        "plain": {"format": "%(asctime)s %(name)s %(levelname)s %(message)s"}
                    },
                    "handlers": {
                        "file": {
                            "class": "logging.FileHandler",
                            "formatter": "plain",
                            "filename": str(self.log_path),
                            "encoding": "utf8",
                        }
                    },
                    "root": {"level": "WARNING", "handlers": ["file"]},
                    "disable_existing_loggers": False,
                }
            ),
            encoding="utf-8",
        )
        config: dict[str, Any] = {
            "server_name": SERVER_NAME,
            "public_baseurl": f"{self.url}/",
            "pid_file": str(data / "homeserver.pid"),
            "listeners": [
                {
                    "port": self.port,
                    "bind_addresses": [LOOPBACK],
                    "type": "http",
                    "tls": False,
                    "x_forwarded": False,
                    "resources": [{"names": ["client"], "compress": False}],
                }
            ],
            "database": {"name": "sqlite3", "args": {"database": str(data / "homeserver.db")}},
            "log_config": str(data / "log.yaml"),
            "media_store_path": str(data / "media"),
            "signing_key_path": str(data / "signing.key"),
            "registration_shared_secret": self.shared_secret,
            "macaroon_secret_key": secrets.token_hex(24),
            "form_secret": secrets.token_hex(24),
            "enable_registration": True,
            "enable_registration_without_verification": True,
            "report_stats": False,
            "enable_metrics": False,
            # no federation, no outbound network: no federation listener, nobody to federate
            # with, no notary servers to fetch keys from, no URL previews
            "federation_domain_whitelist": [],
            "trusted_key_servers": [],
            "suppress_key_server_warning": True,
            "url_preview_enabled": False,
            "presence": {"enabled": False},
            "user_directory": {"enabled": False},
            **RATE_LIMITS,
        }
        # JSON is YAML: no YAML library needed on this side
        self.config_path.write_text(json.dumps(config, indent=1), encoding="utf-8")

    # --- the process --------------------------------------------------------------------------

    def start(self) -> None:
        """Start the homeserver and wait until its client API answers."""
        if self.process is not None:
            raise SynapseError("Synapse is already running")
        if not SYNAPSE_PYTHON.exists():
            raise SynapseError(f"{SYNAPSE_PYTHON} is missing: run `make peers` (or `make test`)")
        self._output = (self.directory / "stdout.log").open("ab")
        env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
        self.process = subprocess.Popen(
            [
                str(SYNAPSE_PYTHON),
                "-m",
                "synapse.app.homeserver",
                "--config-path",
                str(self.config_path),
            ],
            cwd=self.directory,
            stdout=self._output,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                code = self.process.returncode
                self._reap()
                raise SynapseError(f"Synapse exited with {code} while starting\n{self.log_tail()}")
            if self.ready():
                return
            time.sleep(0.05)
        self.stop()
        raise SynapseError(
            f"Synapse did not answer within {START_SECONDS:.0f} s\n{self.log_tail()}"
        )

    def ready(self) -> bool:
        """Whether the client API answers."""
        try:
            with urllib.request.urlopen(f"{self.url}/_matrix/client/versions", timeout=1) as reply:
                return bool(reply.status == 200)
        except OSError:
            return False

    def stop(self) -> None:
        """Stop the homeserver (SIGTERM, then SIGKILL after a grace period)."""
        process = self.process
        if process is None:
            return
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)
            try:
                process.wait(STOP_SECONDS)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(STOP_SECONDS)
        self._reap()

    def _reap(self) -> None:
        self.process = None
        if self._output is not None:
            self._output.close()
            self._output = None

    def restart(self) -> None:
        """Stop and start again: same port, same database, same users and rooms."""
        self.stop()
        self.start()

    def close(self) -> None:
        """Stop the homeserver and remove the directory it was given (if it made one)."""
        self.stop()
        if self._own_directory:
            shutil.rmtree(self.directory, ignore_errors=True)

    def log_tail(self, lines: int = 40) -> str:
        parts = []
        for path in (self.directory / "stdout.log", self.log_path):
            if path.exists():
                text = path.read_text(encoding="utf-8", errors="replace").splitlines()
                parts.append(f"--- {path.name} ---\n" + "\n".join(text[-lines:]))
        return "\n".join(parts)

    # --- the API ------------------------------------------------------------------------------

    def request(
        self, method: str, path: str, body: dict[str, Any] | None = None, token: str | None = None
    ) -> dict[str, Any]:
        """One client-server API call; raises :class:`SynapseError` on an error status."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"{self.url}{path}", data=data, method=method)
        request.add_header("Content-Type", "application/json")
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(request, timeout=30) as reply:
                result: dict[str, Any] = json.loads(reply.read() or b"{}")
                return result
        except urllib.error.HTTPError as error:
            raw = error.read()
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
            raise SynapseError(
                f"{method} {path}: {error.code} {raw!r}",
                status=error.code,
                body=body if isinstance(body, dict) else None,
            ) from None

    def register(self, localpart: str | None = None, *, admin: bool = False) -> Account:
        """A fresh user (a random name unless given), registered with the shared secret."""
        localpart = localpart or f"u{secrets.token_hex(5)}"
        password = secrets.token_urlsafe(12)
        nonce = self.request("GET", "/_synapse/admin/v1/register")["nonce"]
        mac = hmac.new(self.shared_secret.encode(), digestmod=hashlib.sha1)
        mac.update(
            b"\x00".join(
                [
                    nonce.encode(),
                    localpart.encode(),
                    password.encode(),
                    b"admin" if admin else b"notadmin",
                ]
            )
        )
        result = self.request(
            "POST",
            "/_synapse/admin/v1/register",
            {
                "nonce": nonce,
                "username": localpart,
                "password": password,
                "admin": admin,
                "mac": mac.hexdigest(),
            },
        )
        return Account(
            user_id=result["user_id"],
            password=password,
            access_token=result["access_token"],
            device_id=result["device_id"],
        )

    def delete_device(self, account: Account, device_id: str) -> None:
        """Sign a device out for good (as in Element's session list): its tokens and its
        encryption keys are deleted. Needs the password (user-interactive auth)."""
        path = f"/_matrix/client/v3/devices/{device_id}"
        try:
            self.request("DELETE", path, {}, token=account.access_token)
            return  # no authentication asked for
        except SynapseError as error:
            if error.status != 401:
                raise
            session = error.body.get("session")
        auth = {
            "type": "m.login.password",
            "identifier": {"type": "m.id.user", "user": account.localpart},
            "password": account.password,
            "session": session,
        }
        self.request("DELETE", path, {"auth": auth}, token=account.access_token)

    def device_keys(self, account: Account, user_id: str) -> dict[str, Any]:
        """The devices with published keys of ``user_id``, as ``/keys/query`` gives them."""
        result = self.request(
            "POST",
            "/_matrix/client/v3/keys/query",
            {"device_keys": {user_id: []}},
            token=account.access_token,
        )
        devices: dict[str, Any] = result["device_keys"].get(user_id, {})
        return devices


@contextlib.contextmanager
def running_synapse() -> Iterator[Synapse]:
    """A started homeserver, stopped and removed at the end (also on failure)."""
    server = Synapse()
    try:
        server.start()
        yield server
    finally:
        server.close()
