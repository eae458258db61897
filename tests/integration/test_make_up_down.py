"""`make up`, a deployment run started on its worker, then `make down`: no process of theirs is left (the
server, the worker, the flow run it started in a session of its own, that run's tritonserver), the
port is free, the profile no longer points at the stopped server, and `specops run` works again
on a private Prefect server (after `make up` + `make down` it used to fail at once: "Failed to
reach API at http://127.0.0.1:4200/api/").

`make up` runs as a team's server would: bound to 0.0.0.0 (PREFECT_HOST) for workers on other hosts, with
Prefect's database on a real PostgreSQL (PREFECT_DB_URL, a URL with a password): the server listens on every
address, the profile still reaches it through 127.0.0.1, the deployments are rows of that PostgreSQL
database (no SQLite file appears), and the password shows in no output, log or command line.

The Makefile's own PREFECT_HOME and port are replaced by a temporary home and a free port, so this
collides with no `make up` of the project."""
from __future__ import annotations

import json
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psutil
import psycopg
import pytest

from tests.integration.faults.support import MARK, label, running, wait_gone
from tests.integration.postgres import create_database
from tests.integration.support import REPO_ROOT, listening, service_env

pytestmark = [pytest.mark.integration, pytest.mark.slow]

BIN = Path(sys.executable).parent
# Tests never install: the venvs are what the suite runs in.
MAKE = ["make", "--no-print-directory", "-o", ".venv/.installed", "-o", ".venv-aiperf/.installed"]
TINY = ["benchmark.num_requests=2", "benchmark.output_tokens=8", "comparison.lossless_prompts=1",
        "comparison.lossless_max_tokens=8"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def marked(mark: str) -> list[psutil.Process]:
    """Running processes started with this test's mark in their environment."""
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get(MARK) == mark and running(proc):
                found.append(proc)
        except psutil.Error:
            pass
    return found


def wait_for(labels: set[str], mark: str, timeout_s: float) -> list[psutil.Process]:
    deadline = time.monotonic() + timeout_s
    while True:
        procs = marked(mark)
        if labels <= {label(p) for p in procs}:
            return procs
        assert time.monotonic() < deadline, f"{labels} not running after {timeout_s}s: {[label(p) for p in procs]}"
        time.sleep(0.5)


def deployments_in(database_url: str) -> set[str]:
    """flow/deployment names as Prefect's tables in this PostgreSQL database hold them."""
    with psycopg.connect(database_url.replace("postgresql+psycopg://", "postgresql://")) as conn:
        rows = conn.execute("SELECT f.name, d.name FROM deployment d JOIN flow f ON f.id = d.flow_id").fetchall()
    return {f"{flow}/{deployment}" for flow, deployment in rows}


def run(cmd: list[str], env: dict, timeout_s: float) -> subprocess.CompletedProcess:
    done = subprocess.run(cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=timeout_s)
    assert done.returncode == 0, f"{' '.join(cmd)} exited {done.returncode}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
    return done


def test_make_down_stops_everything_make_up_started_and_runs_work_again(embedded_model, tmp_path, postgres_server):
    mark, port, home = secrets.token_hex(8), free_port(), tmp_path / "prefect-home"
    database = create_database(postgres_server)
    # The test server trusts local connections, so the password is never checked: it is here to be hidden.
    password = f"pw-{secrets.token_hex(12)}"
    prefect_db = database.replace("postgresql+psycopg://specops@", f"postgresql+asyncpg://specops:{password}@")
    # In the environment, as the Makefile asks: a make variable on the command line would show in `ps`.
    # SPECOPS_DEPLOY_DIRTY: `make up` deploys HEAD, which a working tree under edit would refuse; the
    # worker's flow run then runs HEAD.
    env = service_env(tmp_path, PREFECT_HOME=str(home), PREFECT_DB_URL=prefect_db, SPECOPS_DEPLOY_DIRTY="1",
                      **{MARK: mark})
    make = [*MAKE, f"PREFECT_PORT={port}", f"PREFECT_HOME={home}", "PREFECT_HOST=0.0.0.0"]
    try:
        up = run([*make, "up"], env, timeout_s=900)
        sockets = listening(port)
        assert {c.laddr.ip for c in sockets} == {"0.0.0.0"}, sockets
        assert {c.pid for c in sockets} <= {p.pid for p in marked(mark)}, sockets  # the server `make up` started
        assert f"PREFECT_API_URL='http://127.0.0.1:{port}/api'" in run([str(BIN / "prefect"), "config", "view"],
                                                                        env, 60).stdout
        assert "specdec/ngram-local" in deployments_in(database)
        # A browser on another host calls the API the UI names: this host's name, not its own 127.0.0.1.
        public = subprocess.run(["sh", "-c", "hostname -f 2>/dev/null || hostname"], capture_output=True,
                                text=True).stdout.strip()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/ui-settings", timeout=30) as reply:
            assert json.load(reply)["api_url"] == f"http://{public}:{port}/api"
        assert f"workers on other hosts: PREFECT_API_URL=http://{public}:{port}/api" in up.stdout, up.stdout
        assert not (home / "prefect.db").exists()  # Prefect's SQLite default was not used
        assert "postgresql+asyncpg://specops:***@127.0.0.1" in up.stdout
        shown = {"make up": up.stdout + up.stderr}
        shown.update({f"command line of {label(p)}": " ".join(p.cmdline()) for p in marked(mark)})
        assert [where for where, text in shown.items() if password in text] == []
        run([str(BIN / "prefect"), "deployment", "run", "specdec/ngram-local", "-p", "run_id=via-worker",
             "-p", 'overrides=["benchmark.num_requests=200", "benchmark.output_tokens=64"]'], env, 120)
        # The worker's flow run is serving once its model's stub runs: tritonserver starts it a moment
        # later (CI once saw tritonserver alone), and `make down` must be shown to stop it too.
        started = wait_for({"tritonserver", "triton_python_backend_stub"}, mark, timeout_s=600)
        assert len(started) >= 5, [label(p) for p in started]  # server, worker, flow run, tritonserver, stub

        t0 = time.monotonic()
        down = run([*make, "down"], env, timeout_s=120)
        took = time.monotonic() - t0
        left, _ = wait_gone(started, 5)
        assert left == [] and marked(mark) == [], [(p.pid, label(p)) for p in left]
        print(f"make down: {len(started)} processes gone in {took:.1f}s\n{down.stdout}")
        assert took < 60 and listening(port) == []
        assert not (home / "server.pid").exists() and not (home / "worker.pid").exists()
        shown = {"make down": down.stdout + down.stderr, "server.log": (home / "server.log").read_text(),
                 "worker.log": (home / "worker.log").read_text()}  # complete now: both processes are gone
        assert [where for where, text in shown.items() if password in text] == []
        assert "PREFECT_API_URL" not in run([str(BIN / "prefect"), "config", "view"], env, 60).stdout

        args = [sys.executable, "-m", "cli", "run", "ngram-local", "--run-id", "after-down"]
        for item in [*TINY, "comparison.baseline=false"]:  # one server is enough to show runs work again
            args += ["--set", item]
        after = run(args, env, timeout_s=900)
        assert "Failed to reach API" not in after.stdout + after.stderr
        assert (tmp_path / "artifacts" / "ngram-local" / "after-down" / "report.md").is_file()
        assert marked(mark) == []
    finally:
        subprocess.run([*make, "down"], cwd=REPO_ROOT, env=env, capture_output=True, timeout=120)
        for proc in marked(mark):
            proc.kill()
