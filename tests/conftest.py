"""Fixtures shared by unit and integration tests."""
from __future__ import annotations

import os
import shutil
import signal
import tempfile
from pathlib import Path

import pytest

from specops.host.host_lock import LOCK_DIR_ENV

# Runs take the host lock (specops/host/host_lock.py) from their first engine build to their last server
# stop. The suite runs flows side by side on purpose (two xdist workers): each worker process, and
# every run it starts, gets a lock directory of its own; runs started by one test still share it.
# Set, not setdefault: the workers inherit the controller's environment, and a shared directory
# made a run on one worker wait for an interrupted run on the other (CI, 13 s).
# Each process removes its own at the end (pytest_unconfigure): every run used to leave one in the temp directory.
_LOCK_DIR = tempfile.mkdtemp(prefix=f"specops-locks-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}-")
os.environ[LOCK_DIR_ENV] = _LOCK_DIR
# vLLM's CPU engine binds its OpenMP threads to all cores but one, the same ones for every server on the host
# (specops/backends/vllm/cpu.py core_share leaves that default on 2 cores): two workers' vLLM tests at once would
# decode on core 0 together, each at half speed, while core 1 only serves what floats. Each worker's vLLM servers
# get a share of their own, as a platform would give each benchmark host's share; a run's base and speculative
# servers still share theirs, as on any 2-core host. Unset without workers, and where the caller set it.
_WORKER, _WORKERS = os.environ.get("PYTEST_XDIST_WORKER", ""), int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
if _WORKER.startswith("gw") and _WORKERS > 1 and "VLLM_CPU_OMP_THREADS_BIND" not in os.environ:
    _cores, _slot = sorted(os.sched_getaffinity(0)), int(_WORKER[2:]) % _WORKERS
    _share = max(1, (len(_cores) - 1) // _WORKERS)
    if len(_cores) >= _WORKERS:
        os.environ["VLLM_CPU_OMP_THREADS_BIND"] = ",".join(map(str, _cores[_slot * _share:(_slot + 1) * _share]
                                                               or _cores[-1:]))
# The suite's model cache is the checkout's (tests/integration/support.py SHARED_CACHE), not the host's default
# (~/.cache/specops, the user's runs' and `make up`'s worker's), unless SPECOPS_CACHE names one.
os.environ.setdefault("SPECOPS_CACHE", str(Path(__file__).resolve().parents[1] / ".cache" / "specops"))


@pytest.fixture
def sigint_interrupts():
    """SIGINT raises KeyboardInterrupt, as Ctrl-C does at a terminal, however pytest was started.

    A shell without job control starts background commands with SIGINT ignored; Python then
    installs no handler and every child inherits the ignore, so an interrupt test would only
    show that. A handled signal is reset to its default at exec, so children started while
    this fixture is active get Python's usual Ctrl-C behaviour too.
    """
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


# `make test` runs the suite on two pytest-xdist workers (--dist loadgroup): about half the serial
# run's time is spent waiting on servers, timeouts and Prefect, with a core idle. A test file is
# one unit of work (its module fixtures run once); these groups also keep files together on one
# worker, because they share something a second worker must not touch at the same time.
SHARED_WORKER_GROUPS = {
    # One private dockerd (and imported image) per worker: all Docker tests on one.
    "tests/docker/": "docker",
    # `specops janitor` without an owner reaps whatever a dead run left in the shared cache's records:
    # these files kill runs and then expect to reap their leftovers themselves.
    "tests/integration/faults/test_killed_run.py": "janitor",
    "tests/integration/flows/test_slots.py": "janitor",
    "tests/integration/test_make_up_down.py": "janitor",
}


def worker_group(relpath: str) -> str:
    """The xdist group of a test file (a path relative to the repository root)."""
    return next((group for prefix, group in SHARED_WORKER_GROUPS.items() if relpath.startswith(prefix)), relpath)


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the marks
def pytest_collection_modifyitems(config, items):
    root = config.rootpath
    for item in items:
        item.add_marker(pytest.mark.xdist_group(worker_group(item.path.relative_to(root).as_posix())))


def pytest_xdist_node_collection_finished(node, ids):
    """xdist groups by a suffix it writes into each node id; where that does not take (pytest-xdist#1386),
    files would be split across workers (their module fixtures run twice) without a word."""
    ungrouped = [nodeid for nodeid in ids if "@" not in nodeid]
    if node.config.getoption("dist") == "loadgroup" and ungrouped:
        pytest.exit(f"--dist loadgroup did not group {ungrouped[0]} (and {len(ungrouped) - 1} more): this "
                    "pytest-xdist does not work with this pytest (see pyproject.toml)", returncode=4)


def _cpu_times() -> tuple[float, float]:
    """(busy, total) jiffies of all cores since boot, from /proc/stat's first line."""
    fields = [float(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields) - idle, sum(fields)


def pytest_sessionstart(session):
    if not hasattr(session.config, "workerinput"):  # the controller: the whole run, every worker in it
        session.config.stash[_CPU_AT_START] = _cpu_times()


def pytest_unconfigure(config):
    shutil.rmtree(_LOCK_DIR, ignore_errors=True)


def pytest_terminal_summary(terminalreporter, config):
    """How busy the host's cores were over the suite: the measure of how far running tests side by side can go
    (a suite at ~100% is bound by its work, not its scheduling)."""
    start = config.stash.get(_CPU_AT_START, None)
    if start is None:
        return
    busy, total = (now - then for now, then in zip(_cpu_times(), start))
    cores = os.cpu_count() or 1
    wall_s = total / os.sysconf("SC_CLK_TCK") / cores
    terminalreporter.write_line(f"host CPU over the suite: {cores} cores {busy / total:.0%} busy for {wall_s:.0f}s "
                                f"({busy / os.sysconf('SC_CLK_TCK'):.0f} core-seconds of work)")


_CPU_AT_START = pytest.StashKey[tuple[float, float]]()
