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

from specops.cost.meter import CostMeter, ProcessGone, process_tree_cpu_seconds

BURN_S = 1.0  # of CPU time, whatever the wall time under a busy neighbour
# psutil's CPU times are the kernel's user and system times, each cut to whole clock ticks
# (1/USER_HZ, 10 ms at the usual 100): a difference of two readings may miss up to a tick per
# field. Accounting granularity, not a host's pace.
TICK_S = 1 / os.sysconf("SC_CLK_TCK")

# Each child says `ready` once its interpreter is up and waits for the test's `go`: no burn happens
# before the test's first reading, however slowly the host starts processes, and the burn (BURN_S
# of the child's own CPU time beyond what it had used) lies wholly between the two readings.
_READY_THEN_GO = """
import sys, time
from pathlib import Path
done = Path(sys.argv[1])
done.with_name(done.name + ".ready").write_text("ready")
while not done.with_name(done.name + ".go").exists():
    time.sleep(0.01)
start = time.process_time()
"""
# The child burns, writes `done`, then idles; the parent only waits.
LIVE_CHILD = _READY_THEN_GO + f"""
while time.process_time() - start < {BURN_S}:
    pass
done.write_text("done")
time.sleep(60)
"""
# The child burns and exits; the parent reaps it (wait), writes `done`, then idles.
REAPED_CHILD = _READY_THEN_GO + f"""
while time.process_time() - start < {BURN_S / 2}:
    pass
"""
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
    deadline = time.monotonic() + timeout_s  # a bound on a hang, not a timed assertion
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def _ready(done: Path) -> None:
    """Once the child is up and waiting: nothing of the burn has happened yet."""
    _wait_for(done.with_name(done.name + ".ready"))


def _go(done: Path) -> None:
    done.with_name(done.name + ".go").write_text("go")


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
    _ready(done)
    before, parent_before = process_tree_cpu_seconds(parent.pid), _own(parent.pid)
    _go(done)
    _wait_for(done)
    after = process_tree_cpu_seconds(parent.pid, psutil.Process(parent.pid).create_time())
    parent_spent = _own(parent.pid) - parent_before
    # The whole burn lies between the two readings, so all of it is in their difference (less the
    # child's two fields' rounding); the parent's own, read apart, may round up to two ticks more.
    assert after - before >= BURN_S - 2 * TICK_S
    assert after - before - parent_spent >= BURN_S - 4 * TICK_S  # the child's share, beyond the parent alone
    # The parent only waited meanwhile: its own CPU did not grow by the burn (measured from its own
    # reading after start-up, so a slow interpreter start on a slow host is not counted against it).
    assert parent_spent < 0.5 * BURN_S


def test_reaped_child_cpu_is_counted_through_the_parent(tree):
    parent, done = tree(REAPED_CHILD, "reap")
    _ready(done)
    before = process_tree_cpu_seconds(parent.pid)
    _go(done)
    _wait_for(done)
    assert not psutil.Process(parent.pid).children()  # the child is gone: only children_* holds its CPU
    assert process_tree_cpu_seconds(parent.pid) - before >= BURN_S / 2 - 2 * TICK_S


def test_window_over_a_tree(tree):
    parent, done = tree(LIVE_CHILD, "live")
    _ready(done)
    meter = CostMeter(cpu_seconds=partial(process_tree_cpu_seconds, parent.pid), cpu_source="process tree")
    with meter.window() as window:
        _go(done)
        _wait_for(done)
    cpu, gpu = window.totals
    assert cpu >= BURN_S - 2 * TICK_S and gpu is None
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
