"""The private Prefect API server of `specops run` (cli/prefect_api.py) on a real Prefect: it answers,
it is recorded for the janitor, it stops with the run, and it dies with a SIGKILLed run."""
from __future__ import annotations

import json
import subprocess
import sys
import time

import psutil
import pytest

from tests.integration.support import REPO_ROOT, listening, port_free, service_env

pytestmark = [pytest.mark.integration, pytest.mark.slow]

# A stand-in for `specops run`: the API up, a flow-free client call through it, then waits for
# "exit" on stdin (a normal end) or to be killed.
RUN = """
import sys
from cli.prefect_api import prefect_api
from prefect.client.orchestration import get_client
with prefect_api() as url:
    with get_client(sync_client=True) as client:
        assert str(client.api_url).rstrip("/") == url, (client.api_url, url)
        client.hello().raise_for_status()
    print(url, flush=True)
    sys.stdin.readline()
print("stopped", flush=True)
"""


def start(env) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-c", RUN], cwd=REPO_ROOT, env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, start_new_session=True)
    url = proc.stdout.readline().strip()
    assert url.startswith("http://127.0.0.1:"), f"no URL; exit code {proc.poll()}"
    return proc, url


def server_of(proc: subprocess.Popen) -> list[psutil.Process]:
    """The guard and uvicorn under the stand-in."""
    tree = psutil.Process(proc.pid).children(recursive=True)
    assert any("uvicorn" in p.cmdline() and "prefect.server.api.server:create_app" in p.cmdline() for p in tree)
    return tree


def gone(procs: list[psutil.Process], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not [p for p in procs if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]:
            return True
        time.sleep(0.05)
    return False


def records(cache) -> list[dict]:
    return [json.loads(p.read_text()) for p in (cache / "live").glob("*.json")]


def test_the_private_api_serves_the_run_and_stops_with_it(tmp_path):
    env = service_env(tmp_path, SPECOPS_CACHE=str(tmp_path / "cache"))
    proc, url = start(env)
    try:
        tree = server_of(proc)
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        [record] = records(tmp_path / "cache")
        assert (record["kind"], record["owner_pid"]) == ("prefect-server", proc.pid)
        proc.stdin.write("exit\n")
        proc.stdin.flush()
        assert proc.wait(timeout=30) == 0 and proc.stdout.read() == "stopped\n"
        assert gone(tree, 5) and port_free("127.0.0.1", port) and records(tmp_path / "cache") == []
    finally:
        proc.kill()


def test_the_private_api_dies_with_a_sigkilled_run(tmp_path):
    env = service_env(tmp_path, SPECOPS_CACHE=str(tmp_path / "cache"))
    proc, url = start(env)
    tree = server_of(proc)
    proc.kill()
    proc.wait()
    start_s = time.monotonic()
    assert gone(tree, 5), [p.cmdline() for p in tree if p.is_running()]
    print(f"API server gone {time.monotonic() - start_s:.2f}s after SIGKILL of its run")
    # Within the same bound, not at once: a killed multi-threaded server is a zombie leader while its other threads
    # still exit, and its listening socket closes with the last of them (CI once saw it owned by no pid yet).
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    while not port_free("127.0.0.1", port) and time.monotonic() - start_s < 5:
        time.sleep(0.05)
    assert port_free("127.0.0.1", port), listening(port)
    print(f"port {port} free {time.monotonic() - start_s:.2f}s after SIGKILL of its run")


# The run's order (cli/run.py): the server spawned, the flow's modules imported while it starts, then entered.
EARLY = """
import json, time
from cli.prefect_api import prefect_api, start_prefect_api
t0 = time.monotonic()
started = start_prefect_api()
spawned_s = time.monotonic() - t0
import flows.specdec
with prefect_api(started) as url:
    print(json.dumps({"url": url, "started": started.url, "pid": started.proc.pid, "spawned_s": spawned_s,
                      "healthy_s": time.monotonic() - t0}), flush=True)
"""


def test_a_server_started_early_is_the_one_the_run_uses(tmp_path):
    env = service_env(tmp_path, SPECOPS_CACHE=str(tmp_path / "cache"))
    done = subprocess.run([sys.executable, "-c", EARLY], cwd=REPO_ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["url"] == seen["started"]  # not a second server: one spawn, entered once healthy
    assert not psutil.pid_exists(seen["pid"]) or psutil.Process(seen["pid"]).status() == psutil.STATUS_ZOMBIE
    print(f"spawned in {seen['spawned_s']:.2f}s, healthy {seen['healthy_s']:.1f}s after, flow modules imported "
          "meanwhile")
    assert records(tmp_path / "cache") == []


def test_a_configured_api_is_used_as_is(tmp_path):
    script = "from cli.prefect_api import prefect_api\nwith prefect_api() as url: print(url)"
    env = service_env(tmp_path, PREFECT_API_URL="http://127.0.0.1:9/api")
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO_ROOT, env=env, capture_output=True, text=True,
                          timeout=60)
    assert (done.returncode, done.stdout) == (0, "None\n"), done.stderr
