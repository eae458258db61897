"""Stop what `make up` started: `python tools/stop_services.py [--timeout S] PIDFILE...`, in order.

Each pid file names a session leader (`make up` starts the Prefect server and worker and the
artifacts server under setsid). Its whole tree is stopped, not only its process group: the process
worker starts each flow run in a session of its own. Every process of the tree but the leader
gets SIGTERM (a flow run then crashes, and its hooks stop its servers), the leader once they are
gone (a worker stopping first would kill its runs outright), and whatever still runs at the
timeout gets SIGKILL. A Triton Python stub whose server is gone gets SIGKILL as soon as it is seen: it ignores
SIGTERM by design (kill_orphaned_stubs). A pid file whose process is gone, or is no longer the one `make up`
started, is only removed.
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from contextlib import suppress
from pathlib import Path

import psutil


def tree(leader: psutil.Process) -> list[psutil.Process]:
    """The leader, its descendants, and members of its session that were re-parented away."""
    found = {p.pid: p for p in [leader, *leader.children(recursive=True)]}
    for proc in psutil.process_iter():
        try:
            if proc.pid not in found and os.getsid(proc.pid) == leader.pid:
                found[proc.pid] = proc
        except (OSError, psutil.Error):
            pass
    return list(found.values())


def running(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE  # init here reaps no orphan
    except psutil.NoSuchProcess:
        return False


def name_of(proc: psutil.Process) -> str:
    try:
        return " ".join(proc.cmdline())[:160] or proc.name()
    except psutil.Error:
        return "?"


def signal_all(procs: list[psutil.Process], sig: int) -> None:
    for proc in procs:
        with suppress(psutil.NoSuchProcess):
            proc.send_signal(sig)


def wait_gone(procs: list[psutil.Process], timeout_s: float, stubs_killed: list[str]) -> list[psutil.Process]:
    deadline = time.monotonic() + timeout_s
    while (alive := [p for p in procs if running(p)]) and time.monotonic() < deadline:
        stubs_killed += kill_orphaned_stubs(alive)
        time.sleep(0.1)
    return alive


STUB = "triton_python_backend_stub"


def kill_orphaned_stubs(procs: list[psutil.Process]) -> list[str]:
    """SIGKILL the Triton Python stubs whose tritonserver is gone or a zombie; return them named.

    A stub ignores SIGTERM by design: its server stops it, and it exits on its own once `kill(parent_pid, 0)` fails
    (triton-inference-server/python_backend src/pb_stub.cc, the health thread). A zombie parent passes that check,
    and where init reaps no orphan (a container without --init, as here) a dead server stays a zombie: its stubs
    would wait out any bound. Orphaned, a stub has nothing left to finish, so SIGKILL is its stop, not a fallback.
    psutil completes the kernel's 15-character process name from the command line."""
    killed = []
    for proc in procs:
        with suppress(psutil.Error):
            parent = proc.parent()
            if proc.name() == STUB and (parent is None or not running(parent) or parent.name() != "tritonserver"):
                proc.kill()
                killed.append(f"{proc.pid} {STUB}")
    return killed


# A word of the command line of each service `make up` starts: Prefect's server and worker, the artifacts server.
# A pid file whose process has none of them names a pid reused by something else, which is left alone.
SERVICES = ("prefect", "serve-artifacts")


def leader_of(pid_file: Path) -> psutil.Process | None:
    """The session leader the pid file names, if it is still the one `make up` started."""
    try:
        proc = psutil.Process(int(pid_file.read_text().split()[0]))
        command = " ".join(proc.cmdline())
        if running(proc) and os.getsid(proc.pid) == proc.pid and any(word in command for word in SERVICES):
            return proc
    except (OSError, ValueError, IndexError, psutil.Error):
        pass
    return None


def stop(pid_file: Path, timeout_s: float) -> str:
    leader = leader_of(pid_file)
    if leader is None:
        pid_file.unlink(missing_ok=True)
        return f"{pid_file.stem}: not running"
    procs = tree(leader)
    start = time.monotonic()
    # The leader's processes first, one SIGTERM each: a flow run then ends as crashed, its report written and its
    # servers stopped. The leader last, once they are gone: Prefect 3.9's worker, stopping, kills its flow runs
    # outright (no report, servers left to the janitor), and a second SIGTERM to a run cuts its teardown short.
    members = [p for p in procs if p.pid != leader.pid]
    signal_all(members, signal.SIGTERM)
    stubs_killed: list[str] = []
    wait_gone(members, timeout_s, stubs_killed)
    signal_all([leader], signal.SIGTERM)
    alive = wait_gone(procs, max(1.0, timeout_s - (time.monotonic() - start)), stubs_killed)  # leader: 1 s at least
    killed = ", ".join(f"{p.pid} {name_of(p)}" for p in alive)  # what ignored SIGTERM, named for whoever reads why
    if alive:
        signal_all(alive, signal.SIGKILL)
        alive = wait_gone(alive, 5, [])
    pid_file.unlink(missing_ok=True)
    if alive:
        return f"{pid_file.stem}: {[p.pid for p in alive]} survived SIGKILL"
    how = f"SIGKILL after SIGTERM: {killed}" if killed else "SIGTERM"
    if stubs_killed:
        how += f"; SIGKILL to orphaned Triton stubs, which ignore SIGTERM: {', '.join(stubs_killed)}"
    return f"{pid_file.stem}: stopped {len(procs)} process(es) in {time.monotonic() - start:.1f}s ({how})"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds between SIGTERM and SIGKILL")
    parser.add_argument("pid_files", nargs="+", type=Path)
    args = parser.parse_args(argv)
    failed = False
    for pid_file in args.pid_files:
        if pid_file.exists():
            message = stop(pid_file, args.timeout)
            failed |= "survived" in message
            print(message)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
