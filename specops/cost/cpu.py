"""CPU-seconds of a server's whole process tree (psutil), as a cumulative reading.

A reading is user+system seconds of the root process and every live descendant, plus what each
of them has already collected from children it reaped (`children_user`/`children_system`). A
process is therefore counted while it lives (its own times) and, once its parent waits for it,
through that parent, so the difference of two readings is what the tree spent in between.

What psutil cannot see, and so is lost from a reading:
- descendants that exited and were reaped by a process outside the tree (e.g. a double-forked
  daemon reparented to init or to a subreaper): their CPU goes to that reaper, not to us;
- children that exited and were never waited for (zombies) count while the zombie stays, and
  vanish from the reading if it is reaped by init;
- a descendant that exits between the walk and its own read (it is skipped for that reading).
Readings are in clock ticks (10 ms here); take windows of seconds, not milliseconds.
"""
from __future__ import annotations

import psutil

CREATE_TIME_TOLERANCE_S = 1.0  # as the janitor: psutil derives create_time from boot time + start ticks


class CpuReadError(RuntimeError):
    """The tree's CPU cannot be read (e.g. a member belongs to another user and psutil is denied)."""


class ProcessGone(CpuReadError):
    """The measured process no longer exists (or its pid now names another process)."""


def _own_seconds(proc: psutil.Process) -> float:
    try:
        t = proc.cpu_times()
    except psutil.AccessDenied as exc:
        raise CpuReadError(f"no access to the CPU times of process {proc.pid}: {exc}") from exc
    return t.user + t.system + t.children_user + t.children_system


def _root(pid: int, create_time: float | None) -> psutil.Process:
    try:
        proc = psutil.Process(pid)
        started = proc.create_time()
    except psutil.NoSuchProcess as exc:
        raise ProcessGone(f"process {pid} has exited: no CPU reading for its tree") from exc
    if create_time is not None and abs(started - create_time) >= CREATE_TIME_TOLERANCE_S:
        raise ProcessGone(f"pid {pid} was recycled: it now names a process created at {started:.2f}, "
                          f"not the server created at {create_time:.2f}")
    return proc


def process_tree_cpu_seconds(pid: int, create_time: float | None = None) -> float:
    """User+system CPU seconds of `pid` and its live descendants, including reaped children.

    `create_time` (psutil's, as recorded when the server started) guards against a recycled
    pid. Raises ProcessGone if the root process is gone; descendants vanishing mid-walk are skipped.
    """
    root = _root(pid, create_time)
    try:
        total = _own_seconds(root)
        descendants = root.children(recursive=True)
    except psutil.NoSuchProcess as exc:
        raise ProcessGone(f"process {pid} exited while its CPU was being read") from exc
    for child in descendants:
        try:
            total += _own_seconds(child)
        except psutil.NoSuchProcess:  # exited since the walk; its parent's children_* takes it once reaped
            continue
    return total
