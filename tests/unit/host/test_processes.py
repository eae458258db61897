"""Free ports, port checks, spawning with a death signal and killing process trees."""
import collections
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import grpc
import psutil
import pytest

from specops.host.processes import (
    kill_process_tree,
    pick_free_ports,
    port_is_free,
    spawn,
    teardown_quietly,
    wait_ports_free,
)


def test_picked_ports_are_distinct_and_free():
    ports = pick_free_ports("127.0.0.1", 3)
    assert len(set(ports)) == 3
    assert all(port_is_free("127.0.0.1", p) for p in ports)


def test_avoided_ports_are_not_picked():
    first = pick_free_ports("127.0.0.1", 3)
    again = pick_free_ports("127.0.0.1", 3, avoid=first)
    assert not set(first) & set(again)


def test_listening_port_is_busy_until_closed():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    port = sock.getsockname()[1]
    assert not port_is_free("127.0.0.1", port)
    assert not port_is_free("0.0.0.0", port)  # a wildcard bind clashes with the loopback listener
    assert wait_ports_free("127.0.0.1", [port], timeout_s=0.3) == [port]
    sock.close()
    assert wait_ports_free("127.0.0.1", [port], timeout_s=2) == []


def test_spawned_child_outlives_the_thread_that_asked(tmp_path):
    # PR_SET_PDEATHSIG fires when the forking *thread* exits: spawn() forks on a long-lived thread
    import threading

    box = {}
    thread = threading.Thread(target=lambda: box.update(p=spawn(["sleep", "30"], {"PATH": "/usr/bin:/bin"}, tmp_path / "log")))
    thread.start()
    thread.join()
    time.sleep(0.3)
    child = box["p"]
    try:
        assert child.poll() is None
        assert os.getpgid(child.pid) == child.pid  # its own session and process group
    finally:
        assert kill_process_tree(child, timeout_s=5) == []
    assert child.returncode == -signal.SIGTERM


# A gRPC server in a process of its own (Triton's place): one in this process did not make the children fail.
GRPC_ECHO_SERVER = """
import time
from concurrent import futures
import grpc
server = grpc.server(futures.ThreadPoolExecutor(2))
echo = grpc.unary_unary_rpc_method_handler(lambda request, context: request)
server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("specops.Echo", {"Call": echo}),))
print(server.add_insecure_port("127.0.0.1:0"), flush=True)
server.start()
time.sleep(600)
"""


@pytest.mark.slow  # 300 starts: ~7 s
def test_children_start_while_another_thread_talks_grpc(tmp_path):
    # As a run starts its second server while a thread polls the first one's readiness over gRPC. With a
    # preexec_fn (fork, gRPC's atfork handlers in the child) 8 to 11 of 300 children died before exec (-6, -11).
    server = subprocess.Popen([sys.executable, "-c", GRPC_ECHO_SERVER], stdout=subprocess.PIPE, text=True)
    port = int(server.stdout.readline())
    done = threading.Event()

    def poll() -> None:
        while not done.is_set():
            with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
                channel.unary_unary("/specops.Echo/Call")(b"ready?", timeout=5)

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    ends: collections.Counter[int] = collections.Counter()
    try:
        for _ in range(300):
            child = spawn(["true"], {"PATH": "/usr/bin:/bin"}, tmp_path / "log")
            ends[child.wait(timeout=30)] += 1
            assert kill_process_tree(child, timeout_s=5) == []  # forgotten: no group to kill at exit
    finally:
        done.set()
        poller.join(timeout=10)
        server.kill()
        server.wait()
    assert ends == {0: 300}, f"children's ends (exit code: count): {dict(ends)}"


def test_the_spawned_command_is_the_child_itself_with_its_signals_at_their_defaults(tmp_path):
    # guard.py --become execs in place: the pid we hold is the command's, and it does not inherit the SIGPIPE
    # the interpreter it ran in ignores (as with subprocess's restore_signals, tools expect the default).
    child = spawn(["sh", "-c", "echo $$; grep SigIgn /proc/$$/status; sleep 30"], {"PATH": "/usr/bin:/bin"},
                  tmp_path / "log")
    try:
        deadline = time.monotonic() + 10
        while len((tmp_path / "log").read_text().splitlines()) < 2:
            assert time.monotonic() < deadline, (tmp_path / "log").read_text()
            time.sleep(0.02)
        pid, ignored = (tmp_path / "log").read_text().splitlines()[:2]
        assert int(pid) == child.pid
        assert not int(ignored.split()[1], 16) & (1 << (signal.SIGPIPE - 1))
    finally:
        assert kill_process_tree(child, timeout_s=5) == []


def test_kill_process_tree_escalates_and_reaps_the_group(tmp_path):
    script = "trap '' TERM; sleep 30 & sleep 30 & wait"
    parent = spawn(["bash", "-c", script], {"PATH": "/usr/bin:/bin"}, tmp_path / "log")
    # Both sleeps started (so the trap, set before them, is in place), however slowly this host
    # runs bash: a bound on a hang, not a timed assertion.
    deadline = time.monotonic() + 30
    while len(children := psutil.Process(parent.pid).children(recursive=True)) < 2:
        assert time.monotonic() < deadline, f"bash started {len(children)} of its 2 sleeps in 30 s"
        time.sleep(0.02)
    assert len(children) == 2
    t0 = time.monotonic()
    assert kill_process_tree(parent, timeout_s=1) == []
    assert time.monotonic() - t0 < 5
    assert parent.returncode == -signal.SIGKILL
    assert not any(c.is_running() and c.status() != psutil.STATUS_ZOMBIE for c in children)


def test_a_member_left_in_the_group_by_a_leader_killed_from_outside_is_killed_too(tmp_path):
    # `make down` SIGTERMs every process of a run at once: a tritonserver dies while its Python stubs, which
    # ignore SIGTERM until their start-up handshake ends, are re-parented out of its tree but stay in its group.
    pid_file = tmp_path / "member.pid"
    leader = spawn(["bash", "-c", f"(trap '' TERM; exec sleep 60) & echo $! > {pid_file}; wait"],
                   {"PATH": "/usr/bin:/bin"}, tmp_path / "log")
    deadline = time.monotonic() + 30
    while not pid_file.exists() or not pid_file.read_text().strip():
        assert time.monotonic() < deadline, "bash did not start its member in 30 s"
        time.sleep(0.02)
    member = psutil.Process(int(pid_file.read_text()))
    os.kill(leader.pid, signal.SIGKILL)
    leader.wait()
    assert member.is_running() and os.getpgid(member.pid) == leader.pid
    assert kill_process_tree(leader, timeout_s=1) == []
    assert not (member.is_running() and member.status() != psutil.STATUS_ZOMBIE)


def test_a_group_never_stopped_is_killed_when_the_process_exits(tmp_path):
    # A run interrupted while a server starts exits without stopping it: the death signal kills the leader alone.
    pid_file = tmp_path / "member.pid"
    code = ("import time; from pathlib import Path; from specops.host.processes import spawn; "
            f"spawn(['bash', '-c', \"(trap '' TERM; exec sleep 60) & echo $! > {pid_file}; wait\"], "
            f"{{'PATH': '/usr/bin:/bin'}}, Path('{tmp_path / 'log'}'))\n"
            f"while not Path('{pid_file}').is_file() or not Path('{pid_file}').read_text().strip(): time.sleep(0.02)")
    subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[3], check=True, timeout=60)
    member = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while psutil.pid_exists(member) and psutil.Process(member).status() != psutil.STATUS_ZOMBIE:
        assert time.monotonic() < deadline, "the group's member outlived the process that spawned its group"
        time.sleep(0.05)


class Cause(RuntimeError):
    pass


def _stop():
    raise RuntimeError("ports still bound [8000]")


def test_the_original_error_survives_a_failing_teardown(caplog):
    caplog.set_level(logging.WARNING, logger="specops.host.processes")
    with pytest.raises(Cause, match="could not bind"):
        try:
            raise Cause("could not bind its ports in 3 attempts")
        except BaseException:
            teardown_quietly(_stop, "stopping tritonserver")
            raise
    assert "stopping tritonserver failed while handling an earlier error" in caplog.text
    assert "ports still bound [8000]" in caplog.text


def test_an_interrupt_during_teardown_still_propagates():
    def interrupted():
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        teardown_quietly(interrupted, "stopping")


# A process that starts OpenMP with libiomp5 preloaded, as every vLLM process runs (specops/backends/vllm/cpu.py):
# the registration appears when torch's first parallel op starts the runtime.
OPENMP = "import torch, sys, time; torch.ones(300, 300) @ torch.ones(300, 300); print('up', flush=True); time.sleep(300)"


def _openmp_process(tmp_path) -> tuple[subprocess.Popen, Path]:
    from specops.backends.vllm import cpu as vllm_cpu
    from specops.host.processes import OMP_REGISTRATIONS

    (iomp,) = [p for p in vllm_cpu.venv().preload() if "libiomp5" in p]
    assert Path(iomp).is_file(), f"{iomp} missing: `make install` builds the vLLM venv that holds it"
    proc = subprocess.Popen([sys.executable, "-c", OPENMP], env=dict(os.environ, LD_PRELOAD=iomp),
                            stdout=subprocess.PIPE, text=True, start_new_session=True)
    assert proc.stdout.readline() == "up\n"
    registration = OMP_REGISTRATIONS / f"__KMP_REGISTERED_LIB_{proc.pid}_{os.getuid()}"
    assert registration.exists(), sorted(p.name for p in OMP_REGISTRATIONS.iterdir())
    return proc, registration


def test_a_stopped_process_leaves_no_openmp_registration_in_dev_shm(tmp_path):
    """Issue 51: libiomp5 removes /dev/shm/__KMP_REGISTERED_LIB_<pid>_<uid> only at a normal exit, and every vLLM
    process specops stopped left one."""
    proc, registration = _openmp_process(tmp_path)
    assert kill_process_tree(proc, timeout_s=5) == []
    assert not registration.exists()


def test_the_janitor_removes_the_registration_a_killed_process_left(tmp_path, monkeypatch):
    from specops.pipeline import janitor

    monkeypatch.setenv("SPECOPS_CACHE", str(tmp_path / "cache"))
    proc, registration = _openmp_process(tmp_path)
    proc.kill()  # as a run's process tree is when the run itself is SIGKILLed: nothing of specops stops it
    proc.wait()
    assert registration.exists()
    messages: list[str] = []
    janitor.sweep(timeout_s=5, log=messages.append)
    assert not registration.exists() and any(str(registration) in m for m in messages), messages
