"""The watchdog against real processes: a tiny HTTP server that is killed, stopped or goes silent."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import urllib.request
from pathlib import Path

import psutil
import pytest

from specops.bench.tool_process import run_logged
from specops.host.liveness import ServerDown, Watchdog, Watchdogs, exit_cause, process_state
from specops.host.processes import pick_free_ports

# Answers GET / with 200 until it receives SIGUSR1; from then on it accepts connections and
# never answers (a deadlocked server: alive, listening, silent).
SERVER = textwrap.dedent("""
    import http.server, signal, sys, time
    silent = False
    def hush(*_):
        global silent
        silent = True
    signal.signal(signal.SIGUSR1, hush)
    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            while silent:
                time.sleep(1)
            self.send_response(200); self.end_headers(); self.wfile.write(b"ok")
        def log_message(self, *a): pass
    http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
""")


# A load generator stand-in: a process that starts a child (as genai-perf starts perf_analyzer).
TOOL = ("import subprocess, sys, time; "
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)', sys.argv[1]]); time.sleep(300)")


class ProcessServer:
    """What a backend's Server gives the watchdog, for a plain process."""

    def __init__(self, tmp_path: Path):
        self.port = pick_free_ports("127.0.0.1", 1)[0]
        self.log_path = tmp_path / "server.log"
        self.log_path.write_text("line one\nlast line of the server log\n")
        self.proc = subprocess.Popen([sys.executable, "-c", SERVER, str(self.port)])
        deadline = time.monotonic() + 20
        while not self.answers(1.0):
            assert time.monotonic() < deadline, "test server did not start"
            time.sleep(0.1)

    def describe(self) -> str:
        return f"test server pid {self.proc.pid}"

    def state(self) -> str | None:
        code = self.proc.poll()
        if code is not None:
            return exit_cause(code)
        if psutil.Process(self.proc.pid).status() == psutil.STATUS_STOPPED:
            return "is stopped (SIGSTOP)"
        return None

    def answers(self, timeout_s: float) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/", timeout=timeout_s) as resp:
                return resp.status == 200
        except OSError:
            return False

    def log_tail(self, lines: int = 20) -> str:
        return "\n".join(self.log_path.read_text().splitlines()[-lines:])

    def close(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGCONT)
            self.proc.kill()
        self.proc.wait(10)


@pytest.fixture
def server(tmp_path):
    s = ProcessServer(tmp_path)
    yield s
    s.close()


def _until_down(watch: Watchdog, bound_s: float) -> tuple[ServerDown, float]:
    start = time.monotonic()
    while time.monotonic() - start < bound_s:
        try:
            watch.check()
        except ServerDown as down:
            return down, time.monotonic() - start
        time.sleep(0.05)
    raise AssertionError(f"not detected within {bound_s}s")


def test_a_healthy_server_passes(server):
    watch = Watchdog(server, "benchmark", poll_s=0.1, stall_s=1.0)
    end = time.monotonic() + 1.5
    while time.monotonic() < end:
        watch.check()
        time.sleep(0.05)


def test_a_killed_server_is_named_with_its_signal_and_log(server):
    watch = Watchdog(server, "benchmark", poll_s=0.2)
    watch.check()
    server.proc.kill()
    down, _ = _until_down(watch, 5)  # at a poll, far inside the stall bound
    text = str(down)
    assert text.startswith(f"during the benchmark, test server pid {server.proc.pid} was killed by SIGKILL; its log")
    assert str(server.log_path) in text and "last line of the server log" in text


def test_a_stopped_server_is_noticed_without_waiting_for_the_stall_bound(server):
    watch = Watchdog(server, "check", poll_s=0.2, stall_s=60)
    os.kill(server.proc.pid, signal.SIGSTOP)
    down, _ = _until_down(watch, 5)  # far inside the 60 s stall bound: the state was asked, not the probe
    assert "is stopped (SIGSTOP)" in str(down)


def test_a_silent_server_fails_after_the_stall_bound_and_not_before(server):
    watch = Watchdog(server, "benchmark", poll_s=0.2, stall_s=2.0, probe_timeout_s=0.3)
    os.kill(server.proc.pid, signal.SIGUSR1)
    down, took = _until_down(watch, 10)
    assert took >= 2.0  # not before the stall bound (the upper one is _until_down's)
    assert "stopped answering its readiness probe" in str(down)


def test_call_gives_up_a_blocked_request_when_the_server_dies(server):
    watch = Watchdog(server, "lossless check", poll_s=0.2)
    os.kill(server.proc.pid, signal.SIGUSR1)  # the request below now hangs
    killer = subprocess.Popen(["sh", "-c", f"sleep 1; kill -9 {server.proc.pid}"])
    start = time.monotonic()
    with pytest.raises(ServerDown, match="during the lossless check, test server pid .* was killed by SIGKILL"):
        watch.call(lambda: urllib.request.urlopen(f"http://127.0.0.1:{server.port}/", timeout=60).read())
    assert time.monotonic() - start < 3.0
    killer.wait(5)


def test_a_failed_call_is_blamed_on_the_server_that_died(server):
    watch = Watchdog(server, "smoke request")

    def request_then_die():
        server.proc.kill()
        raise ConnectionResetError("Stream removed (Socket closed)")

    with pytest.raises(ServerDown, match="was killed by SIGKILL") as info:
        watch.call(request_then_die)
    assert isinstance(info.value.__cause__, ConnectionResetError)


def test_a_failed_call_with_a_healthy_server_keeps_its_own_error(server):
    watch = Watchdog(server, "smoke request")

    def fail():
        raise ValueError("bad request")

    start = time.monotonic()
    with pytest.raises(ValueError, match="bad request"):
        watch.call(fail)
    assert time.monotonic() - start < 3.0  # at most the grace spent looking for a dead server


def test_a_tool_on_a_dead_server_is_killed_at_once_with_its_process_group(server, tmp_path):
    """run_logged with a watchdog: the client (a process and its child, both tagged with a marker)
    dies within seconds of the server, not at its timeout."""
    watch = Watchdog(server, "benchmark", poll_s=0.2)
    killer = subprocess.Popen(["sh", "-c", f"sleep 1; kill -9 {server.proc.pid}"])
    marker = f"specops-liveness-{os.getpid()}"
    start = time.monotonic()
    with pytest.raises(ServerDown, match="during the benchmark, test server pid .* was killed by SIGKILL"):
        run_logged("tool", [sys.executable, "-c", TOOL, marker], dict(os.environ), tmp_path / "tool.log",
                   timeout_s=600, watch=watch)
    assert time.monotonic() - start < 10
    killer.wait(5)
    left = [p for p in psutil.process_iter(["cmdline"]) if marker in " ".join(p.info["cmdline"] or [])]
    assert not left


def test_an_interleaved_tool_is_killed_when_either_of_its_servers_dies(tmp_path):
    """Watchdogs: a run that drives two servers is stopped by the death of the second one, which is named."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first, second = ProcessServer(tmp_path / "a"), ProcessServer(tmp_path / "b")
    try:
        watch = Watchdogs([Watchdog(first, "interleaved benchmark", poll_s=0.2),
                           Watchdog(second, "interleaved benchmark", poll_s=0.2)])
        killer = subprocess.Popen(["sh", "-c", f"sleep 1; kill -9 {second.proc.pid}"])
        marker = f"specops-liveness-pair-{os.getpid()}"
        start = time.monotonic()
        with pytest.raises(ServerDown, match=f"test server pid {second.proc.pid} was killed by SIGKILL"):
            run_logged("tool", [sys.executable, "-c", TOOL, marker], dict(os.environ), tmp_path / "tool.log",
                       timeout_s=600, watch=watch)
        assert time.monotonic() - start < 10
        killer.wait(5)
        assert first.answers(1.0)  # the healthy one was not blamed, and is still up
    finally:
        first.close()
        second.close()


def test_process_state_names_why_a_server_process_cannot_serve():
    assert process_state(None) == "was stopped"
    popen = subprocess.Popen([sys.executable, "-c", "import subprocess, sys, time; "
                              "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); time.sleep(60)"],
                             start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while not psutil.Process(popen.pid).children() and time.monotonic() < deadline:
            time.sleep(0.05)
        child = psutil.Process(popen.pid).children()[0]
        assert process_state(popen) is None
        os.kill(child.pid, signal.SIGSTOP)  # a frozen child stalls the server as a frozen parent would
        deadline = time.monotonic() + 5
        while process_state(popen) is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert process_state(popen) == f"is stopped (SIGSTOP: pid {child.pid}) and answers nothing"
    finally:
        os.killpg(popen.pid, signal.SIGKILL)
        popen.wait(10)
    assert process_state(popen) == "was killed by SIGKILL"
