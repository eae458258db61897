"""Helpers for tests that run real services: isolated run dirs and Prefect homes, shared model cache."""
from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil

from specops.host.processes import kill_process_tree, pick_free_ports

REPO_ROOT = Path(__file__).resolve().parents[2]
# The embedded model conversion is shared by every test (and by `make demo`) through this cache.
SHARED_CACHE = Path(os.environ.get("SPECOPS_CACHE", REPO_ROOT / ".cache" / "specops"))


_MIGRATED_HOME: list[Path] = []


def migrated_prefect_home() -> Path:
    """A PREFECT_HOME whose database Prefect has already migrated, made once per test session: a fresh
    home costs each private API start ~7 s of migrations (13 s instead of 6 on this machine's 2 cores)."""
    if not _MIGRATED_HOME:
        home = Path(tempfile.mkdtemp(prefix="specops-migrated-prefect-home-"))
        atexit.register(shutil.rmtree, home, True)
        env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
        subprocess.run([str(Path(sys.executable).parent / "prefect"), "server", "database", "upgrade", "-y"],
                       env=dict(env, PREFECT_HOME=str(home)), check=True, capture_output=True, timeout=600)
        _MIGRATED_HOME.append(home)
    return _MIGRATED_HOME[0]


def service_env(tmp: Path, **extra: str) -> dict[str, str]:
    """Environment for a specops/prefect subprocess: own artifacts and Prefect home (a copy of one already
    migrated, see migrated_prefect_home), shared model cache."""
    home = Path(extra.get("PREFECT_HOME") or tmp / "prefect-home")
    # A home the caller names is used as given: `make up` there must be seen to create no SQLite database.
    if "PREFECT_HOME" not in extra and not home.exists():
        shutil.copytree(migrated_prefect_home(), home)
    env = dict(os.environ)
    env.update(
        SPECOPS_CACHE=str(SHARED_CACHE),
        SPECOPS_ARTIFACTS=str(tmp / "artifacts"),
        PREFECT_HOME=str(home),
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
        PREFECT_LOGGING_LEVEL="INFO",
        PATH=os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]),
    )
    env.pop("PREFECT_API_URL", None)
    env.update(extra)
    return env


def listening(port: int) -> list:
    """The TCP sockets listening on this port, any address."""
    return [c for c in psutil.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN and c.laddr.port == port]


def port_free(host: str, port: int) -> bool:
    """True when nothing listens on host:port (on host itself or on a wildcard address; any address
    when host is a wildcard).

    Not "bind() succeeds": a freed ephemeral port can at once become another test's client
    source port, and bind() fails on that too (CI once found a port unbindable 0.00 s after
    its dead server was gone), which is not a leak."""
    wildcards = ("0.0.0.0", "::")
    return not [c for c in listening(port) if host in wildcards or c.laddr.ip in (host, *wildcards)]


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


@contextmanager
def prefect_server(env: dict[str, str], log_path: Path, timeout_s: float = 180) -> Iterator[str]:
    """`prefect server start` on a free 127.0.0.1 port, in a session of its own, with `env`; yields its
    API URL once /health answers, and stops its process group (SIGTERM, SIGKILL after 30 s) after."""
    port = pick_free_ports("127.0.0.1", 1)[0]
    api = f"http://127.0.0.1:{port}/api"
    with log_path.open("w") as log:
        server = subprocess.Popen([str(Path(sys.executable).parent / "prefect"), "server", "start", "--host",
                                   "127.0.0.1", "--port", str(port)], env=dict(env, PREFECT_API_URL=api),
                                  stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            assert server.poll() is None, f"prefect server exited:\n{log_path.read_text()[-3000:]}"
            try:
                with urllib.request.urlopen(f"{api}/health", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline, f"prefect server not healthy after {timeout_s}s:\n" \
                                                f"{log_path.read_text()[-3000:]}"
            time.sleep(1)
        yield api
    finally:
        kill_process_tree(server, timeout_s=30)


# One regression flow run in a process of its own (Prefect's log and event senders then end with it, not at
# pytest's exit); its last line is the JSON of its verdicts and whether it raised RegressionFound.
_RUN_REGRESSION = """
import json, sys
from flows.regression import RegressionFound, regression
from specops.regression.policy import RegressionPolicy
from specops.regression.suite import SuiteEntry

suite, policy = [SuiteEntry(**e) for e in json.loads(sys.argv[1])], RegressionPolicy(**json.loads(sys.argv[2]))
try:
    judged, failed = regression(suite, policy), False
except RegressionFound as found:
    judged, failed = found.verdicts, True
print(json.dumps({"failed": failed, "verdicts": {v.metric: v.verdict.value for v in judged}}))
"""


def run_regression_flow(suite: list[dict], policy: dict, env: dict[str, str], timeout: float) -> dict:
    """The regression flow on `suite` under `policy`: {"failed": bool, "verdicts": {metric: verdict}}."""
    done = subprocess.run([sys.executable, "-c", _RUN_REGRESSION, json.dumps(suite), json.dumps(policy)],
                          cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


class WebhookServer:
    """An HTTP server on 127.0.0.1 that keeps every JSON body POSTed to it (with its path and arrival time),
    answering 204: the endpoint of an alert block under test. Serves from creation until close()."""

    def __init__(self) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        received: list[dict] = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                received.append({"path": self.path, "at": time.monotonic(), **json.loads(body or b"{}")})
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.received = received
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self._server.server_port}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def wait_for(self, match, timeout_s: float) -> dict | None:
        """The first body `match` accepts, waiting up to timeout_s; None if none came."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            found = [body for body in self.received if match(body)]
            if found:
                return found[0]
            time.sleep(0.5)
        return None

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
