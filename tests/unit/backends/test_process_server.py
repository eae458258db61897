"""specops.backends.process_server.ProcessServer with real small processes (no stand-ins): `python -m http.server`
as the server, and a Python server that ignores SIGTERM and starts grandchildren (one in its process group, one
that leaves it with setsid), as vLLM's API server with its engine core and workers can.
"""
from __future__ import annotations

import os
import signal
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from specops.backends.process_server import ProcessServer, ProcessStartError
from specops.host.processes import pick_free_ports, port_is_free
from specops.http_client import http_ok
from specops.triton.client import Endpoint

HOST = "127.0.0.1"

# Serves HTTP on argv[1]; ignores SIGTERM; starts a grandchild in its group and one in a session of its own, both
# ignoring SIGTERM too, and writes their pids to argv[2].
STUBBORN = textwrap.dedent("""
    import http.server, signal, subprocess, sys
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sleeper = [sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"]
    kids = [subprocess.Popen(sleeper), subprocess.Popen(sleeper, start_new_session=True)]
    with open(sys.argv[2], "w") as fh:
        fh.write(" ".join(str(k.pid) for k in kids))
    http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), http.server.SimpleHTTPRequestHandler).serve_forever()
""")


def make_server(tmp_path: Path, argv_tail: list[str], port: int | None = None) -> ProcessServer:
    port = port or pick_free_ports(HOST, 1)[0]
    url = f"http://{HOST}:{port}/"
    return ProcessServer([sys.executable, *[a.format(port=port) for a in argv_tail]], dict(os.environ),
                         tmp_path / "logs" / "server.log", lambda timeout_s: http_ok(url, timeout_s),
                         name="test server", version=("python", sys.version.split()[0]),
                         endpoint=Endpoint(HOST, port, port, port))


@pytest.fixture
def servers():
    started: list[ProcessServer] = []
    yield started
    for server in started:  # whatever a failed test left running
        server.stop(2.0)


def http_server(tmp_path: Path, servers: list) -> ProcessServer:
    server = make_server(tmp_path, ["-m", "http.server", "{port}", "--bind", HOST, "--directory", str(tmp_path)])
    servers.append(server)
    return server


def tree(pid: int) -> list[psutil.Process]:
    root = psutil.Process(pid)
    return [root, *root.children(recursive=True)]


def alive(p: psutil.Process) -> bool:
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def wait_for(condition, timeout_s: float = 10.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    return condition()


def test_ready_running_and_stopped(tmp_path, servers):
    server = http_server(tmp_path, servers).start()
    server.wait_ready(30)
    assert server.state() is None and server.answers(2.0)
    assert not port_is_free(HOST, server.endpoint.http_port)
    pid = server.pid
    procs = tree(pid)
    assert len(procs) >= 2  # the guard and the http.server under it
    record = server.record()
    assert record["pid"] == pid and record["ports"] == [server.endpoint.http_port]
    assert record["create_time"] == psutil.Process(pid).create_time()
    assert (record["tool"], record["version"]) == ("python", sys.version.split()[0])
    assert server.cpu_seconds() >= 0.0
    server.stop(5.0)
    assert not any(alive(p) for p in procs)
    assert port_is_free(HOST, server.endpoint.http_port)
    assert server.state() == "was stopped"
    assert server.record()["pid"] == pid  # kept after stop (the janitor's record is removed by it)
    server.stop(5.0)  # idempotent
    log = server.log_path.read_text()
    assert log.startswith("# specops launch: ") and "http.server" in log.splitlines()[0]


def test_state_says_stopped_after_sigstop(tmp_path, servers):
    server = http_server(tmp_path, servers).start()
    server.wait_ready(30)
    child = psutil.Process(server.pid).children()[0]  # the http.server, under the guard
    os.kill(child.pid, signal.SIGSTOP)
    try:
        state = wait_for(server.state)
        assert state is not None and "stopped" in state and str(child.pid) in state
        assert not server.answers(1.0)
    finally:
        os.kill(child.pid, signal.SIGCONT)
    assert wait_for(lambda: server.state() is None)
    t0 = time.monotonic()
    server.stop(5.0)  # a stopped-then-continued server still stops on SIGTERM, not after the bound
    assert time.monotonic() - t0 < 5.0


def test_state_after_a_sigstopped_server_is_stopped(tmp_path, servers):
    """stop() continues a frozen group so that SIGTERM lands without waiting out the bound."""
    server = http_server(tmp_path, servers).start()
    server.wait_ready(30)
    procs = tree(server.pid)
    os.killpg(server.pid, signal.SIGSTOP)
    assert wait_for(server.state) and "stopped" in server.state()
    t0 = time.monotonic()
    server.stop(10.0)
    assert time.monotonic() - t0 < 10.0
    assert not any(alive(p) for p in procs)


@pytest.mark.parametrize("target", ["server", "group"])
def test_state_after_kill(tmp_path, servers, target):
    server = http_server(tmp_path, servers).start()
    server.wait_ready(30)
    if target == "server":
        os.kill(psutil.Process(server.pid).children()[0].pid, signal.SIGKILL)  # the guard ends the same way
    else:
        os.killpg(server.pid, signal.SIGKILL)
    assert wait_for(lambda: server.state() is not None)
    assert server.state() == "was killed by SIGKILL"
    assert not server.answers(1.0)


def test_stop_is_bounded_for_a_server_that_ignores_sigterm(tmp_path, servers):
    pids = tmp_path / "grandchildren"
    server = make_server(tmp_path, ["-c", STUBBORN, "{port}", str(pids)])
    servers.append(server)
    server.start()
    server.wait_ready(30)
    grandchildren = [psutil.Process(int(p)) for p in wait_for(lambda: pids.is_file() and pids.read_text().split())]
    procs = tree(server.pid)
    assert all(g in procs for g in grandchildren)
    assert os.getpgid(grandchildren[0].pid) == server.pid and os.getpgid(grandchildren[1].pid) != server.pid
    timeout = 2.0
    t0 = time.monotonic()
    server.stop(timeout)
    elapsed = time.monotonic() - t0
    assert elapsed >= timeout  # SIGTERM was ignored: it waited the bound out
    assert elapsed < timeout + 6.0  # then SIGKILL, strays reaped, port checked
    assert not [p.pid for p in procs if alive(p)]
    assert port_is_free(HOST, server.endpoint.http_port)
    assert server.record()["pid"] == procs[0].pid and server.state() == "was stopped"


def test_a_server_that_exits_before_ready_says_so_with_its_log(tmp_path, servers):
    server = make_server(tmp_path, ["-c", "import sys; print('model not found: /nowhere', flush=True); sys.exit(3)"])
    servers.append(server)
    server.start()
    with pytest.raises(ProcessStartError) as err:
        server.wait_ready(30)
    assert "test server exited with code 3 before it was ready" in str(err.value)
    assert "model not found: /nowhere" in str(err.value) and str(server.log_path) in str(err.value)


def test_a_server_that_never_answers_is_not_ready_within_the_deadline(tmp_path, servers):
    server = make_server(tmp_path, ["-c", "import time; print('loading', flush=True); time.sleep(600)"])
    servers.append(server)
    server.start()
    t0 = time.monotonic()
    with pytest.raises(ProcessStartError, match=r"not ready within 1s") as err:
        server.wait_ready(1.0)
    assert time.monotonic() - t0 < 6.0 and "loading" in str(err.value)
    assert server.state() is None  # still running: stopping it is the caller's job
    server.stop(2.0)


def test_a_second_start_is_refused(tmp_path, servers):
    server = http_server(tmp_path, servers).start()
    with pytest.raises(RuntimeError, match="already started"):
        server.start()


def test_a_start_whose_port_another_listener_took_starts_again_on_new_ports(tmp_path, servers):
    """Issue 51: tritonserver starts again on new ports when its port was taken between the pick and the bind; a
    process server (vLLM's OpenAI server) failed the run. The first pick is taken by a listener of this test's."""
    import socket

    from specops.backends.process_server import start_on_free_ports

    made: list[ProcessServer] = []
    squatter = socket.socket()

    def on_free_ports() -> ProcessServer:
        made.append(server := http_server(tmp_path, servers))
        if len(made) == 1:  # another listener binds the picked port before the server does
            squatter.bind((HOST, server.endpoint.http_port))
            squatter.listen()
        return server

    try:
        up = start_on_free_ports(on_free_ports, ready_timeout_s=30, stop_timeout_s=2)
        assert len(made) == 2 and up is made[1] and up.endpoint.http_port != made[0].endpoint.http_port
        assert http_ok(f"http://{HOST}:{up.endpoint.http_port}/", 5)
        # a profile that fixes its port gets the failure, not a server on another port
        made.clear()
        with pytest.raises(ProcessStartError, match="[Aa]ddress already in use"):
            start_on_free_ports(lambda: made.append(s := make_server(
                tmp_path, ["-m", "http.server", "{port}", "--bind", HOST], port=squatter.getsockname()[1]))
                                or servers.append(s) or s, ready_timeout_s=30, stop_timeout_s=2, fixed_port=True)
        assert len(made) == 1
    finally:
        squatter.close()
