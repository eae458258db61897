"""specops/host/guard.py on real processes: exit status passes through, and nothing a guarded command
starts (children, a setsid'd one, a double-forked one) outlives the guard's parent, SIGKILL included."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from specops.host import guard
from specops.host.processes import spawn_guarded

ENV = {"PATH": "/usr/bin:/bin"}
# A tool with a child, a child in its own session, and a double-forked (orphaned) grandchild.
TREE = "sleep 300 & setsid sleep 301 & (sleep 302 &); echo started; wait"
# The guard's parent in these tests: a stand-in for `specops run`, started with its own death
# so the test can SIGKILL it.
PARENT = """
import subprocess, sys, time
from specops.host.processes import spawn_guarded
proc = spawn_guarded(["bash", "-c", sys.argv[1]], {"PATH": "/usr/bin:/bin"}, stdout=subprocess.PIPE, text=True)
print(proc.pid, proc.stdout.readline().strip(), flush=True)
time.sleep(300)
"""

# A tool like genai-perf: many threads, its child (perf_analyzer) started from one of them.
THREADED_TOOL = """
import subprocess, threading, time
for _ in range(20):
    threading.Thread(target=time.sleep, args=(300,), daemon=True).start()
child = subprocess.Popen(["sleep", "306"])
print(child.pid, flush=True)
time.sleep(300)
"""
# A process whose main thread has exited while another thread, the one that started its child,
# still runs: /proc shows it as a zombie (Z), and its child's parent is still its pid.
ZOMBIE_LEADER = """
import ctypes, subprocess, threading, time
def start():
    print(subprocess.Popen(["sleep", "307"]).pid, flush=True)
    time.sleep(300)
threading.Thread(target=start).start()
time.sleep(0.3)
ctypes.CDLL(None).pthread_exit(None)
"""


def alive(pids: list[int]) -> list[int]:
    out = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:  # this host's init reaps no orphan
                out.append(pid)
        except psutil.NoSuchProcess:
            pass
    return out


def wait_dead(pids: list[int], timeout_s: float) -> list[int]:
    deadline = time.monotonic() + timeout_s
    while alive(pids) and time.monotonic() < deadline:
        time.sleep(0.02)
    return alive(pids)


def tree_of(pid: int) -> list[str]:
    names = []
    for child in psutil.Process(pid).children(recursive=True):
        try:
            names.append(" ".join(child.cmdline()))
        except psutil.NoSuchProcess:
            pass
    return sorted(names)


def test_exit_code_signal_and_output_pass_through():
    done = spawn_guarded(["sh", "-c", "echo out; echo err >&2; exit 3"], ENV, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    out, err = done.communicate(timeout=10)
    assert (done.returncode, out, err) == (3, "out\n", "err\n")
    killed = spawn_guarded(["sh", "-c", "kill -9 $$"], ENV)
    assert killed.wait(timeout=10) == -signal.SIGKILL  # as if unguarded: callers say "killed by SIGKILL"
    missing = spawn_guarded(["no-such-tool-here"], ENV, stderr=subprocess.PIPE, text=True)
    assert missing.wait(timeout=10) == 127 and "cannot run no-such-tool-here" in missing.stderr.read()


def test_the_guard_leads_the_group_and_a_group_sigterm_is_a_graceful_stop():
    proc = spawn_guarded(["sh", "-c", "trap 'echo stopping; exit 5' TERM; echo ready; sleep 300 & wait"], ENV,
                         stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline() == "ready\n"
        assert os.getpgid(proc.pid) == proc.pid
        os.kill(proc.pid, signal.SIGTERM)  # to the guard alone: it reaches nothing and stops nothing
        with pytest.raises(subprocess.TimeoutExpired):
            proc.wait(timeout=1)
        os.killpg(proc.pid, signal.SIGTERM)  # what kill_process_tree and the janitor send first
        # The command sees the signal once: the guard no longer passes on what the group got.
        assert proc.wait(timeout=10) == 5 and proc.stdout.read() == "stopping\n"
    finally:
        proc.kill()


def test_what_the_command_leaves_running_is_stopped_when_it_exits():
    proc = spawn_guarded(["sh", "-c", "setsid sleep 303 & echo $!"], ENV, stdout=subprocess.PIPE, text=True)
    leftover = int(proc.stdout.readline())
    assert proc.wait(timeout=10) == 0
    assert wait_dead([leftover], 1) == []


def test_every_descendant_dies_soon_after_the_parent_is_sigkilled(tmp_path: Path):
    parent = subprocess.Popen([sys.executable, "-c", PARENT, TREE], stdout=subprocess.PIPE, text=True,
                              cwd=Path(__file__).resolve().parents[3], start_new_session=True)
    try:
        guard_pid, started = parent.stdout.readline().split()
        assert started == "started"
        # the double-forked sleep is re-parented to the guard (a subreaper), not to init
        expected = ["bash -c " + TREE, "sleep 300", "sleep 301", "sleep 302"]
        deadline = time.monotonic() + 5
        while (names := tree_of(int(guard_pid))) != expected and time.monotonic() < deadline:
            time.sleep(0.05)  # the subshell that forked sleep 302 exits, the sleeps exec
        assert names == expected
        tree = [p.pid for p in psutil.Process(int(guard_pid)).children(recursive=True)]
        parent.kill()
        start = time.monotonic()
        assert wait_dead([int(guard_pid), *tree], 5) == []
        assert time.monotonic() - start < 1.0  # measured: ~0.05 s
    finally:
        parent.kill()
        parent.wait()


def test_a_stream_of_death_signals_still_kills_the_whole_tree():
    """The death signal arrives once per exiting thread of the parent (measured: 2 to 3 times when
    `specops run` is SIGKILLed). A handler re-entered while a killed tool was half gone used to
    end the guard with the tool's child still running (16 of 30 trials here; CI saw
    perf_analyzer outlive a killed run). A continuous stream of SIGHUP makes that window certain."""
    for _ in range(5):
        proc = spawn_guarded([sys.executable, "-c", THREADED_TOOL], ENV, stdout=subprocess.PIPE, text=True)
        try:
            child = int(proc.stdout.readline())
            tree = [p.pid for p in psutil.Process(proc.pid).children(recursive=True)]
            assert child in tree
            deadline = time.monotonic() + 5
            while proc.poll() is None and time.monotonic() < deadline:
                os.kill(proc.pid, guard.PARENT_GONE)
            assert proc.wait(timeout=5) == 128 + guard.PARENT_GONE
            assert wait_dead(tree, 5) == []
        finally:
            proc.kill()
            for pid in alive(tree):
                os.kill(pid, signal.SIGKILL)


def test_the_tree_walk_goes_through_a_zombie_leader_to_its_running_child():
    proc = subprocess.Popen([sys.executable, "-c", ZOMBIE_LEADER], stdout=subprocess.PIPE, text=True)
    child = int(proc.stdout.readline())
    try:
        deadline = time.monotonic() + 5
        while psutil.Process(proc.pid).status() != psutil.STATUS_ZOMBIE and time.monotonic() < deadline:
            time.sleep(0.02)
        assert psutil.Process(proc.pid).status() == psutil.STATUS_ZOMBIE
        assert psutil.Process(child).ppid() == proc.pid
        found = guard.descendants(os.getpid())
        assert child in found and proc.pid not in found  # the zombie itself needs no signal
    finally:
        proc.kill()
        os.kill(child, signal.SIGKILL)
        proc.wait()
