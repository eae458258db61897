"""Helpers for tests that run real services: isolated run dirs and Prefect homes, shared model cache."""
from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

import psutil

REPO_ROOT = Path(__file__).resolve().parents[2]
# The embedded model conversion is shared by every test (and by `make demo`) through this cache.
SHARED_CACHE = Path(os.environ.get("SPECOPS_CACHE", REPO_ROOT / ".cache" / "specops"))


def service_env(tmp: Path, **extra: str) -> dict[str, str]:
    """Environment for a specops/prefect subprocess: own artifacts and Prefect home, shared model cache."""
    env = dict(os.environ)
    env.update(
        SPECOPS_CACHE=str(SHARED_CACHE),
        SPECOPS_ARTIFACTS=str(tmp / "artifacts"),
        PREFECT_HOME=str(tmp / "prefect-home"),
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
        PREFECT_LOGGING_LEVEL="INFO",
        PATH=os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]),
    )
    env.pop("PREFECT_API_URL", None)
    env.update(extra)
    return env


def port_free(host: str, port: int) -> bool:
    """True when nothing listens on host:port (SO_REUSEADDR: TIME_WAIT does not count)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
            return True
        except OSError:
            return False


def processes_mentioning(text: str) -> list[dict]:
    """Processes whose command line contains text (a run directory names its server and stubs)."""
    found = []
    for p in psutil.process_iter(["pid", "name", "cmdline"]):
        try:
            if text in " ".join(p.info["cmdline"] or []):
                found.append(p.info)
        except psutil.NoSuchProcess:
            pass
    return found
