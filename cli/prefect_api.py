"""The Prefect API a `specops run` talks to: the configured one, or a private server that dies with the run.

With no PREFECT_API_URL, Prefect starts an ephemeral API server itself (SubprocessASGIServer) as
a plain child process: a SIGKILLed `specops run` left it running forever. So the CLI starts the
same server (same command, same environment) itself, under specops/host/guard.py, records it for the
janitor, points Prefect at it for the run, and stops it at the end.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from specops.host import tracking
from specops.host.processes import kill_process_tree, pick_free_ports, spawn_guarded
from specops.http_client import http_ok

HOST = "127.0.0.1"
STOP_TIMEOUT_S = 5.0
LAUNCH_ATTEMPTS = 3  # a port picked free can be taken before uvicorn binds it
# What Prefect sets for its ephemeral server (prefect/server/api/server.py, _run_uvicorn_command):
# no UI, ephemeral services only.
SERVER_ENV = {"PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1", "PREFECT__SERVER_FINAL": "1"}


class PrefectApiError(RuntimeError):
    """The private Prefect API server did not become healthy; the message carries its log tail."""


@dataclass
class Started:
    """What start_prefect_api began: a private server spawned and not yet healthy, or none (one is configured)."""

    proc: subprocess.Popen | None = None
    url: str = ""
    log_path: Path | None = None
    timeout_s: float = 0.0  # PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS, from the spawn on
    deadline: float = 0.0


def start_prefect_api() -> Started:
    """Spawn the private server without waiting for it: its ~5 s of imports then overlap the caller's (a run's
    flow modules), where `with prefect_api()` alone pays both in turn. It dies with this process (guard)."""
    from prefect.context import refresh_global_settings_context
    from prefect.settings import PREFECT_API_URL, PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS

    # Prefect may have been imported before the CLI set its defaults (prefect_defaults): its
    # settings are read from the environment once, at import.
    refresh_global_settings_context()
    if PREFECT_API_URL.value():  # `make up`'s server, a remote one, Prefect Cloud
        return Started()
    timeout_s = PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS.value()
    return _spawn(timeout_s, time.monotonic() + timeout_s)


@contextmanager
def prefect_api(started: Started | None = None) -> Iterator[str | None]:
    """Yield the API URL of a private server for the duration (None: one is configured; used as is). `started`:
    the server start_prefect_api spawned earlier, else it is spawned here."""
    started = started or start_prefect_api()
    if started.proc is None:
        yield None
        return
    proc, url, log_path = _healthy_server(started)
    record = tracking.track_process(proc.pid, "prefect-server", f"Prefect API {url}")
    try:
        with _pointed_at(url):
            try:
                yield url
            finally:
                _drain_prefect_clients()
    finally:
        kill_process_tree(proc, STOP_TIMEOUT_S)
        tracking.unregister(record)
        log_path.unlink(missing_ok=True)


def _spawn(timeout_s: float, deadline: float) -> Started:
    from prefect.settings import get_current_settings

    settings = get_current_settings()
    env = {**os.environ, **SERVER_ENV, **settings.to_environment_variables(exclude_unset=True)}
    home = Path(settings.home)
    home.mkdir(parents=True, exist_ok=True)
    port = pick_free_ports(HOST, 1)[0]
    log_path = home / f"specops-api-{port}.log"
    with log_path.open("wb") as log:
        proc = spawn_guarded(_command(port), env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    return Started(proc, f"http://{HOST}:{port}/api", log_path, timeout_s, deadline)


def _healthy_server(started: Started) -> tuple[subprocess.Popen, str, Path]:
    """Wait for the spawned server; spawn again where it exited first (a port picked free can be taken before
    uvicorn binds it), LAUNCH_ATTEMPTS in all."""
    for attempt in range(1, LAUNCH_ATTEMPTS + 1):
        proc, url, log_path = started.proc, started.url, started.log_path
        while time.monotonic() < started.deadline:
            if proc.poll() is not None:
                break
            if _healthy(url):
                return proc, url, log_path
            time.sleep(0.1)
        else:
            kill_process_tree(proc, STOP_TIMEOUT_S)
            raise PrefectApiError(f"the Prefect API server on {url} was not healthy within {started.timeout_s:g}s "
                                  f"(PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS); its log {log_path} "
                                  f"ends with:\n{_tail(log_path)}")
        if attempt == LAUNCH_ATTEMPTS or time.monotonic() >= started.deadline:
            raise PrefectApiError(f"the Prefect API server exited with code {proc.returncode} before it was "
                                  f"healthy ({attempt} attempt(s)); its log {log_path} ends with:\n{_tail(log_path)}")
        log_path.unlink(missing_ok=True)
        started = _spawn(started.timeout_s, started.deadline)
    raise AssertionError("unreachable")


def _command(port: int) -> list[str]:
    import prefect

    return [sys.executable, "-m", "uvicorn", "--app-dir", str(prefect.__module_path__.parent), "--factory",
            "prefect.server.api.server:create_app", "--host", HOST, "--port", str(port), "--log-level", "error",
            "--lifespan", "on"]


def _healthy(url: str) -> bool:
    return http_ok(f"{url}/health", 2.0)


@contextmanager
def _pointed_at(url: str) -> Iterator[None]:
    """PREFECT_API_URL for this process and every thread in it. Prefect's threads without a
    settings context read the process-wide one, made at import: it is rebuilt from the environment."""
    from prefect.context import refresh_global_settings_context

    previous = os.environ.get("PREFECT_API_URL")
    os.environ["PREFECT_API_URL"] = url
    refresh_global_settings_context()
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("PREFECT_API_URL", None)
        else:
            os.environ["PREFECT_API_URL"] = previous
        refresh_global_settings_context()


def _drain_prefect_clients() -> None:
    """Deliver the run's last logs and events while the server is still up (Prefect does the same
    at exit, but its own server would stop after that)."""
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker

    for worker in (APILogWorker, EventsWorker):
        with suppress(Exception):  # undelivered logs must not turn a finished run into a failure
            worker.drain_all(timeout=5)


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "".join(path.read_text(errors="replace").splitlines(True)[-lines:]) or "(empty)"
    except OSError:
        return "(no log)"
