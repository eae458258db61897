"""A real PostgreSQL 15 for the results store's tests, started from the Debian package's binaries.

PostgreSQL refuses to run as root, and the tests do run as root here: the data directory is
handed to the `postgres` user and initdb/pg_ctl run as that user through runuser. The server
listens on 127.0.0.1 only, on a free port, with its socket in the same temporary directory, so
it touches nothing of the machine's own cluster (if any).
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest

PG_BIN = Path("/usr/lib/postgresql/15/bin")
INSTALL = ("PostgreSQL 15 server binaries are missing from /usr/lib/postgresql/15/bin: install them with "
           "`apt-get install -y postgresql` (or `make install`, which installs the Debian packages it needs)")
USER = "specops"  # superuser created by initdb, trust auth: no password to leak or to manage


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _as_postgres(args: list[str]) -> list[str]:
    """PostgreSQL will not run as root: switch to the unprivileged `postgres` user when we are root."""
    return ["runuser", "-u", "postgres", "--", *args] if os.geteuid() == 0 else args


def _run(args: list[str], cwd: Path, timeout: float) -> None:
    done = subprocess.run(_as_postgres(args), check=False, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    if done.returncode:
        raise RuntimeError(f"{' '.join(args)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")


def _start(root: Path, data: Path, port: int | None = None) -> int:
    """pg_ctl start on `port`, or on a free port (a port taken between probe and bind gets another try)."""
    log = root / "server.log"
    for candidate in [port] if port else [_free_port() for _ in range(3)]:
        options = f"-c listen_addresses=127.0.0.1 -p {candidate} -k {root} -c fsync=off -c max_connections=40"
        try:
            # -l: the server's output goes to a file, so pg_ctl returns without holding our pipes open
            _run([str(PG_BIN / "pg_ctl"), "-D", str(data), "-l", str(log), "-o", options, "-w", "-t", "60", "start"],
                 cwd=root, timeout=90)
            return candidate
        except RuntimeError as exc:
            failure = exc
    raise RuntimeError(f"{failure}\nserver log:\n{log.read_text() if log.exists() else '(none)'}")


def _stop(root: Path, data: Path) -> None:
    """Fast shutdown, bounded; SIGKILL to the postmaster if it does not go in time."""
    try:
        _run([str(PG_BIN / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "-t", "30", "stop"], cwd=root, timeout=45)
    except (RuntimeError, subprocess.TimeoutExpired):
        pid_file = data / "postmaster.pid"
        if pid_file.exists():
            try:
                os.kill(int(pid_file.read_text().split()[0]), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass


class Postgres:
    """A PostgreSQL server of its own: stopped and started again by a test (the database gone mid-run)."""

    def __init__(self, root: Path):
        self.root, self.data, self.port = root, root / "data", 0

    @property
    def server_url(self) -> str:
        return f"postgresql+psycopg://{USER}@127.0.0.1:{self.port}/"

    def start(self) -> None:
        # Again on the same port: the URL the run was given is the one that comes back.
        self.port = _start(self.root, self.data, self.port or None)

    def stop(self) -> None:
        _stop(self.root, self.data)


@contextmanager
def own_postgres() -> Iterator[Postgres]:
    """initdb + start in a temporary directory; stopped and removed at the end."""
    if not (PG_BIN / "initdb").is_file() or not (PG_BIN / "pg_ctl").is_file():
        pytest.fail(INSTALL)
    # Not under pytest's tmp dir: /tmp/pytest-of-root is 0700, the postgres user could not enter it.
    root = Path(tempfile.mkdtemp(prefix="specops-pg-"))
    server = Postgres(root)
    try:
        if os.geteuid() == 0:
            shutil.chown(root, user="postgres")
        _run([str(PG_BIN / "initdb"), "-D", str(server.data), "-A", "trust", "-U", USER, "-E", "UTF8", "--no-locale",
              "--no-sync"], cwd=root, timeout=120)
        server.start()
        try:
            yield server
        finally:
            server.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """`postgresql+psycopg://specops@127.0.0.1:<port>/` of a server that lives for the session."""
    with own_postgres() as server:
        yield server.server_url


def create_database(server_url: str) -> str:
    """A new empty database on the server; its URL."""
    name = f"specops_{uuid.uuid4().hex[:12]}"
    host_port = server_url.split("@", 1)[1].rstrip("/")
    host, port = host_port.split(":")
    with psycopg.connect(host=host, port=int(port), user=USER, dbname="postgres", autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return f"{server_url}{name}"


@pytest.fixture(scope="session")
def postgres_url(postgres_server: str) -> str:
    """`postgresql+psycopg://specops@127.0.0.1:<port>/<db>`: a database on the session's server."""
    return create_database(postgres_server)


@pytest.fixture
def fresh_postgres_url(postgres_server: str) -> str:
    """A database of its own for one test, so tests that count rows do not see each other's."""
    return create_database(postgres_server)
