"""CPU-seconds of a real process tree: a parent python whose child burns CPU."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

import psutil
import pytest

from specops.cost.cpu import ProcessGone, process_tree_cpu_seconds
from specops.cost.meter import CostMeter

BURN_S = 1.0  # of CPU time, whatever the wall time under a busy neighbour

# The child burns BURN_S of its own CPU time, writes `done`, then idles; the parent only waits.
LIVE_CHILD = f"""
import sys, time
while time.process_time() < {BURN_S}:
    pass
open(sys.argv[1], "w").write("done")
time.sleep(60)
"""
# The parent runs a child that burns and exits, reaps it (wait), writes `done`, then idles.
REAPED_CHILD = f"import time\nwhile time.process_time() < {BURN_S / 2}:\n    pass\n"
PARENT = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", sys.argv[1], sys.argv[2]])
if sys.argv[3] == "reap":
    child.wait()
    open(sys.argv[2], "w").write("done")
time.sleep(60)
"""


def _own(pid: int) -> float:
    t = psutil.Process(pid).cpu_times()
    return t.user + t.system


def _wait_for(path: Path, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


@pytest.fixture
def tree(tmp_path):
    procs = []

    def start(child: str, mode: str) -> tuple[subprocess.Popen, Path]:
        done = tmp_path / f"done-{len(procs)}"
        proc = subprocess.Popen([sys.executable, "-c", PARENT, child, str(done), mode], start_new_session=True)
        procs.append(proc)
        return proc, done

    yield start
    for proc in procs:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # its own session: the parent and its child
        except ProcessLookupError:
            pass
        proc.wait(timeout=10)


def test_live_child_cpu_is_counted(tree):
    parent, done = tree(LIVE_CHILD, "live")
    before = process_tree_cpu_seconds(parent.pid)
    _wait_for(done)
    after = process_tree_cpu_seconds(parent.pid, psutil.Process(parent.pid).create_time())
    assert after - before >= 0.5 * BURN_S
    assert after - _own(parent.pid) >= 0.5 * BURN_S  # the child's share, beyond the parent alone
    assert _own(parent.pid) < 0.5 * BURN_S


def test_reaped_child_cpu_is_counted_through_the_parent(tree):
    parent, done = tree(REAPED_CHILD, "reap")
    before = process_tree_cpu_seconds(parent.pid)
    _wait_for(done)
    assert not psutil.Process(parent.pid).children()  # the child is gone: only children_* holds its CPU
    assert process_tree_cpu_seconds(parent.pid) - before >= 0.5 * BURN_S / 2


def test_window_over_a_tree(tree):
    parent, done = tree(LIVE_CHILD, "live")
    meter = CostMeter(cpu_seconds=partial(process_tree_cpu_seconds, parent.pid), cpu_source="process tree")
    with meter.window() as window:
        _wait_for(done)
    cpu, gpu = window.totals
    assert cpu >= 0.5 * BURN_S and gpu is None
    cost = window.cost(output_tokens=2000)
    assert cost.cpu_s_per_1k_tokens == pytest.approx(cpu / 2) and cost.cpu_source == "process tree"


def test_recycled_pid_is_refused():
    created = psutil.Process().create_time()
    assert process_tree_cpu_seconds(os.getpid(), created) > 0
    with pytest.raises(ProcessGone, match="recycled"):
        process_tree_cpu_seconds(os.getpid(), created - 3600)


def test_exited_process_raises_clearly():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait(timeout=30)
    with pytest.raises(ProcessGone, match=f"process {proc.pid} has exited"):
        process_tree_cpu_seconds(proc.pid)


def test_window_reports_a_server_that_died():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    meter = CostMeter(cpu_seconds=partial(process_tree_cpu_seconds, proc.pid), cpu_source="process tree")
    window = meter.window()
    window.start()
    proc.kill()
    proc.wait(timeout=10)
    assert window.stop() == (None, None)
    cost = window.cost(output_tokens=100)
    assert cost.cpu_seconds is None and "has exited" in cost.cpu_source


def test_a_falling_reading_is_no_figure():
    readings = iter([30.0, 29.5])  # a descendant was reaped outside the tree: its CPU left the reading
    window = CostMeter(cpu_seconds=lambda: next(readings), cpu_source="process tree").window()
    window.start()
    assert window.stop() == (None, None)
    assert "fell from 30.00s to 29.50s" in window.cost(output_tokens=10).cpu_source
