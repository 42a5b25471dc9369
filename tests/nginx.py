"""nginx on loopback for the scale-out tests and ``bench/scale.py`` (Debian's ``nginx``; ``make
nginx`` installs it).

:func:`running_nginx` renders the shipped ``deploy/nginx.conf`` (and ``deploy/coterie-proxy.conf``)
for a throwaway server — the ``listen 443 ssl`` line becomes ``127.0.0.1:PORT`` on a free port, the
certificate lines go, and each ``upstream`` block gets the given workers' ports — wraps it in a
minimal main config in a temporary directory (pid file, logs, temp paths there), starts
``nginx -g 'daemon off;'`` and yields a :class:`Nginx`. The server is stopped (``SIGQUIT``, then
``SIGKILL``) and the directory removed at the end. Nothing listens beyond 127.0.0.1.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
LOOPBACK = "127.0.0.1"
CANDIDATES = ("/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/local/nginx/sbin/nginx")


class NginxMissing(RuntimeError):
    """nginx is not installed."""


def find_nginx() -> str:
    found = shutil.which("nginx") or next((p for p in CANDIDATES if os.path.exists(p)), None)
    if found is None:
        raise NginxMissing("nginx is not installed: run `make nginx` (apt-get install nginx)")
    return found


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class Nginx:
    port: int
    directory: Path

    def url(self, path: str) -> str:
        return f"http://{LOOPBACK}:{self.port}{path}"

    def error_log(self) -> str:
        log = self.directory / "error.log"
        return log.read_text(errors="replace") if log.exists() else ""


def render(port: int, upstreams: Mapping[str, Sequence[int]], proxy_conf: Path) -> str:
    """``deploy/nginx.conf`` for a test: plain HTTP on ``127.0.0.1:port``, the given workers."""
    text = (DEPLOY / "nginx.conf").read_text()
    for name, ports in upstreams.items():
        servers = "".join(
            f"    server {LOOPBACK}:{p} max_fails=1 fail_timeout=5s;\n" for p in ports
        )
        text, count = re.subn(
            rf"(upstream {re.escape(name)} \{{\n)(?:    server [^\n]*\n)+",
            lambda match, servers=servers: match.group(1) + servers,
            text,
        )
        if count != 1:
            raise AssertionError(f"deploy/nginx.conf has no upstream {name} block")
    text, count = re.subn(r"listen 443 ssl;", f"listen {LOOPBACK}:{port};", text)
    if count != 1:
        raise AssertionError("deploy/nginx.conf has no `listen 443 ssl;` line")
    text = re.sub(r"\n\s*ssl_[^\n]*", "", text)
    return text.replace("/etc/nginx/coterie-proxy.conf", str(proxy_conf))


@contextmanager
def running_nginx(
    upstreams: Mapping[str, Sequence[int]], *, workers: int = 1, timeout: float = 15.0
) -> Iterator[Nginx]:
    binary = find_nginx()
    directory = Path(tempfile.mkdtemp(prefix="coterie-nginx-"))
    directory.chmod(0o755)
    process: subprocess.Popen[bytes] | None = None
    try:
        proxy_conf = directory / "coterie-proxy.conf"
        shutil.copy(DEPLOY / "coterie-proxy.conf", proxy_conf)
        port = free_port()
        temp = "".join(
            f"    {kind}_temp_path {directory / 'tmp' / kind};\n"
            for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
        )
        main = (
            f"worker_processes {workers};\n"
            f"pid {directory / 'nginx.pid'};\n"
            f"error_log {directory / 'error.log'} warn;\n"
            "events { worker_connections 1024; }\n"
            "http {\n"
            "    access_log off;\n"
            f"{temp}"
            f"{render(port, upstreams, proxy_conf)}\n"
            "}\n"
        )
        config = directory / "nginx.conf"
        config.write_text(main)
        (directory / "tmp").mkdir()
        process = subprocess.Popen(
            [
                binary,
                "-p",
                str(directory),
                "-c",
                str(config),
                "-e",
                str(directory / "error.log"),
                "-g",
                "daemon off;",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        server = Nginx(port, directory)
        deadline = time.monotonic() + timeout
        while True:
            if process.poll() is not None:
                err = process.stderr.read().decode(errors="replace") if process.stderr else ""
                raise RuntimeError(f"nginx exited at start:\n{err}{server.error_log()}")
            with suppress(OSError), socket.create_connection((LOOPBACK, port), timeout=0.5):
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"nginx did not listen within {timeout} s")
            time.sleep(0.05)
        yield server
    finally:
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGQUIT)
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)
        shutil.rmtree(directory, ignore_errors=True)
