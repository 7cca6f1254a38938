"""Fixtures for the Python interop tests.

The tests talk to a real Orrery Flight SQL server over a socket. When
ORRERY_FLIGHT_PORT is set (test/interop/run.sh does that), they use the server
described by the ORRERY_* variables. Otherwise this file starts one itself from
the built dist/ (``npm run build`` first) on a free loopback port, with a
throw-away data directory, and stops it at the end of the session.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[3]
CLI = REPO_ROOT / "dist" / "src" / "cli.js"
STARTUP_TIMEOUT_S = 60.0

DEFAULT_API_KEYS = [
    {"name": "admin", "key": "admin-key-0123"},
    {"name": "reader", "key": "reader-key-0123", "audiences": ["public"]},
]


@dataclasses.dataclass(frozen=True)
class Orrery:
    host: str
    port: int
    admin_user: str
    admin_key: str
    reader_user: str
    reader_key: str
    http_port: int

    @property
    def uri(self) -> str:
        return f"grpc://{self.host}:{self.port}"


class _ServerProcess:
    """An `orrery serve` child whose combined output is drained into a log file."""

    def __init__(self) -> None:
        self.data_dir = tempfile.mkdtemp(prefix="orrery-py-interop-")
        self.log_path = Path(self.data_dir) / "orrery-server.log"
        self.port = _free_port()
        self.http_port = _free_port()
        self.ready = threading.Event()
        self.lines: list[str] = []
        env = dict(os.environ)
        env.update(
            ORRERY_FLIGHT_SQL_ADDR=f"127.0.0.1:{self.port}",
            ORRERY_HTTP_ADDR=f"127.0.0.1:{self.http_port}",
            ORRERY_DATA_DIR=self.data_dir,
            MICROMEGAS_API_KEYS=json.dumps(DEFAULT_API_KEYS),
            MICROMEGAS_ADMINS=json.dumps(["admin"]),
        )
        self.proc = subprocess.Popen(
            ["node", str(CLI), "serve"],
            cwd=str(REPO_ROOT),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            encoding="utf-8",
            errors="replace",
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        # Ready once both listeners are up (the Flight SQL one is logged first).
        marker = f"listening on 127.0.0.1:{self.http_port}"
        with open(self.log_path, "w", encoding="utf-8") as log:
            assert self.proc.stdout is not None
            for line in self.proc.stdout:
                log.write(line)
                log.flush()
                self.lines.append(line)
                if marker in line:
                    self.ready.set()

    def wait_ready(self) -> None:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.ready.wait(0.2):
                return
            if self.proc.poll() is not None:
                self._reader.join(2)
                raise RuntimeError(
                    f"orrery serve exited with code {self.proc.returncode} before "
                    f"listening; output:\n{self.tail()}"
                )
        raise RuntimeError(
            f"orrery serve did not print 'Flight SQL listening on 127.0.0.1:{self.port}' "
            f"within {STARTUP_TIMEOUT_S:.0f}s; output so far:\n{self.tail()}"
        )

    def tail(self, n: int = 60) -> str:
        return "".join(self.lines[-n:])

    def stop(self) -> None:
        if self.proc.poll() is None:
            # Only our own child (its own session/process group, started above).
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._reader.join(5)


def _die_with_parent() -> None:
    """In the child: get SIGTERM if pytest dies without running its teardown."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except Exception:
        pass


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


_started: _ServerProcess | None = None


@pytest.fixture(scope="session")
def orrery() -> Orrery:
    """Where the server under test listens, and the two principals to use."""
    global _started
    env = os.environ
    if env.get("ORRERY_FLIGHT_PORT"):
        yield Orrery(
            host=env.get("ORRERY_FLIGHT_HOST", "127.0.0.1"),
            port=int(env["ORRERY_FLIGHT_PORT"]),
            admin_user=env.get("ORRERY_ADMIN_USER", "admin"),
            admin_key=env.get("ORRERY_ADMIN_KEY", "admin-key-0123"),
            reader_user=env.get("ORRERY_READER_USER", "reader"),
            reader_key=env.get("ORRERY_READER_KEY", "reader-key-0123"),
            http_port=int(env.get("ORRERY_HTTP_PORT", "4318")),
        )
        return

    if not CLI.exists():
        pytest.exit(f"{CLI} not found: run `npm run build` in {REPO_ROOT} first", returncode=2)
    if shutil.which("node") is None:
        pytest.exit("node is not on PATH", returncode=2)

    server = _ServerProcess()
    _started = server
    try:
        server.wait_ready()
        yield Orrery(
            host="127.0.0.1",
            port=server.port,
            admin_user="admin",
            admin_key="admin-key-0123",
            reader_user="reader",
            reader_key="reader-key-0123",
            http_port=server.http_port,
        )
    finally:
        server.stop()
        if os.environ.get("ORRERY_INTEROP_KEEP_DATA") != "1" and not _had_failures:
            shutil.rmtree(server.data_dir, ignore_errors=True)


_had_failures = False


def pytest_runtest_logreport(report):
    global _had_failures
    if report.failed:
        _had_failures = True


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if _started is not None and (_had_failures or exitstatus not in (0, 5)):
        terminalreporter.section("orrery server output (last 60 lines)")
        terminalreporter.write(_started.tail())
        terminalreporter.write_line(f"full log: {_started.log_path}")
