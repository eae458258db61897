"""CPU-seconds of a container from the Docker stats API: a busybox loop burning CPU.

Nothing here is sized by how fast or how busy the host is. The loop has no iteration count: it
spins until the test signals it. Each stats reading is taken with the container paused (frozen,
so no CPU accrues while the daemon answers) and compared with the kernel's own count of CPU time
of the container's only process (host /proc), read just before and just after the call: the
reading must move exactly as that count does, whatever the pace of the host. How long the burn
lasts is also the kernel's count: the test lets it run until that process has used
MIN_BURN_CPU_S, which takes ~that long on an idle core and longer on a crowded one, never a
fixed wall time that a busy host may not fill nor an iteration count a fast host finishes early.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from specops.cost.meter import ContainerStatsMissing, container_cpu_seconds

pytestmark = pytest.mark.integration

# PID 1 (sh) prints "burning", then spins on shell builtins alone (no fork, no syscall) until
# SIGUSR1 sets $stop (ash runs the trap between loop iterations), prints "burnt" and execs sleep:
# PID 1 stays the container's only task from start to end, so its CPU time is the cgroup's
# (plus a constant: the threads of runc's init that exited before sh started).
BURN = ("stop=; trap 'stop=1' USR1; echo burning; while [ -z \"$stop\" ]; do :; done; "
        "echo burnt; exec sleep 60")
# Enough CPU that a reading which does not move (0, a constant) or moves at the wrong rate (halved,
# per-CPU, a clock) misses the kernel's count by far more than TOLERANCE_S.
MIN_BURN_CPU_S = 0.5
# The kernel's two counts (the task's and its cgroup's) are charged together, in nanoseconds;
# this only absorbs the coarsest interface's rounding: /proc/<pid>/stat's 1/USER_HZ (10 ms at the
# usual 100) on each of two reads, used where /proc/<pid>/schedstat (ns) is missing. Accounting
# granularity, not a pace: the same on a fast or a slow host.
TOLERANCE_S = 0.02
IDLE_WINDOW_S = 1.0  # wall time the sleeping container is watched for
DEADLINE_S = 120.0   # hang guards only: nothing is asserted about how long anything took


def _task_cpu_seconds(pid: int) -> float:
    """CPU time of one task by the kernel's count: schedstat's sum_exec_runtime (ns), the same
    runtime the scheduler charges to its cgroup; else utime + stime, which the kernel scales to it."""
    try:
        return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0]) / 1e9
    except FileNotFoundError:  # a kernel without CONFIG_SCHED_INFO
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _bracketed_reading(container, pid: int) -> tuple[float, float, float]:
    """(kernel's count just before, container_cpu_seconds, kernel's count just after), taken with
    the container paused: its cgroup frozen, the two counts agree and pin the reading down."""
    container.pause()
    try:
        before = _task_cpu_seconds(pid)
        reading = container_cpu_seconds(container)  # a paused container is still running to the daemon
        return before, reading, _task_cpu_seconds(pid)
    finally:
        container.unpause()


def _assert_delta_bracketed(first, second, what: str) -> float:
    """The readings' difference lies between the kernel's counts over the inner span (first
    reading's end -> second's start) and the outer one (first's start -> second's end); paused,
    the two spans hold the same CPU time, so this is an equality up to TOLERANCE_S."""
    (a0, a, a1), (b0, b, b1) = first, second
    delta = b - a
    assert b0 - a1 - TOLERANCE_S <= delta <= b1 - a0 + TOLERANCE_S, (
        f"{what}: stats say {delta:.4f} CPU-s, the kernel {b0 - a1:.4f}..{b1 - a0:.4f} CPU-s")
    return delta


def _wait_for_log(container, marker: str, timeout_s: float = DEADLINE_S) -> None:
    deadline = time.monotonic() + timeout_s
    while marker not in container.logs().decode(errors="replace"):
        container.reload()
        assert container.status == "running", f"container {container.status}: {container.logs()!r}"
        assert time.monotonic() < deadline, f"no {marker!r} after {timeout_s}s"
        time.sleep(0.05)


def _wait_until(condition, what: str, timeout_s: float = DEADLINE_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"{what}: not after {timeout_s}s"
        time.sleep(0.05)


def test_container_cpu_grows_while_it_burns(dockerd, test_image):
    container = dockerd.containers.run(test_image, ["sh", "-c", BURN], detach=True, network_mode="none",
                                       labels={"specops.run": "cost-cpu"})
    try:
        container.reload()
        pid = container.attrs["State"]["Pid"]  # in the host's pid namespace: the private dockerd is local
        _wait_for_log(container, "burning")  # the loop (and its trap) has started
        start = _bracketed_reading(container, pid)
        _wait_until(lambda: _task_cpu_seconds(pid) - start[2] >= MIN_BURN_CPU_S,
                    f"the loop using {MIN_BURN_CPU_S} CPU-s")
        burnt = _assert_delta_bracketed(start, _bracketed_reading(container, pid), "burning")
        assert burnt >= MIN_BURN_CPU_S - TOLERANCE_S  # implied by the bracket; said for the reader

        container.kill(signal="SIGUSR1")
        _wait_for_log(container, "burnt")
        _wait_until(lambda: Path(f"/proc/{pid}/comm").read_text().strip() == "sleep", "sh exec'ing sleep")
        asleep = _bracketed_reading(container, pid)
        time.sleep(IDLE_WINDOW_S)
        idle = _assert_delta_bracketed(asleep, _bracketed_reading(container, pid), "sleeping")
        assert idle <= TOLERANCE_S, f"{idle:.4f} CPU-s while sleeping"  # a sleeping task uses none, at any pace
    finally:
        container.remove(force=True)


def test_stopped_container_has_no_reading(dockerd, test_image):
    container = dockerd.containers.run(test_image, ["sh", "-c", "sleep 30"], detach=True, network_mode="none",
                                       labels={"specops.run": "cost-cpu"})
    try:
        container.kill()
        container.wait(timeout=30)
        container.reload()
        with pytest.raises(ContainerStatsMissing, match="is it running"):
            container_cpu_seconds(container)
    finally:
        container.remove(force=True)
