"""Run one command so that nothing it starts outlives the process that started the guard.

    python -S specops/host/guard.py [--parent PID] [--become SIGNAL] -- CMD ARGS...

A death signal (PR_SET_PDEATHSIG) reaches only the process it is set on: put on genai-perf, it
would kill genai-perf and leave perf_analyzer (its child) re-parented to init, still sending
requests. So specops starts its client tools through this guard, which

- gets PARENT_GONE when its parent dies (SIGKILL included) and then SIGKILLs every descendant;
- is a child subreaper: a descendant that double-forks or calls setsid is re-parented to the
  guard, not to init, so it is still found (and reaped: this host's init reaps nothing);
- runs CMD as its child in the guard's own process group, stdio and environment inherited, so
  killpg() of the guard's group still reaches the whole tool;
- outlives a SIGTERM or SIGINT to its group (a caller's graceful stop: kill_process_tree and
  the janitor signal the group) and waits for CMD, which got that same signal once. Passing it
  on as well made CMD see it twice, and a second signal often means "stop now" (a shell trap
  ran twice in CI). So stop the tool through its group: a signal to the guard alone reaches
  nothing else;
- when CMD ends, stops whatever it left running and ends the same way: its exit code, or death
  by the same signal (so a caller still sees -SIGKILL for a killed tool).

`--become SIGNAL` guards nothing: it sets the death signal and execs CMD in its place (tritonserver). A preexec_fn
would make subprocess fork(), which runs the libraries' atfork handlers in the child: gRPC's killed it (-6, -11)
in 8-13 of 300 starts while a thread polled a server (grpc/grpc#43055), so Triton "exited" in CI with an empty log.

Standard library only, run with `python -S`: it adds ~25 ms to a start (interpreter start-up).
"""
from __future__ import annotations

import ctypes
import os
import signal
import sys
import time

PARENT_GONE = signal.SIGHUP  # "the controlling process went away"; the guard has no terminal
LEFTOVER_GRACE_S = 2.0  # SIGTERM to what CMD left running, then SIGKILL
GIVE_UP_S = 10.0  # a descendant stuck in the kernel (D state) must not hold the guard forever

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_child: int | None = None  # CMD's pid while it runs
_stopping = False  # the parent died: the guard is killing everything below it


def descendants(root: int) -> list[int]:
    """Every live process below `root`, from one pass over /proc (this kernel has no
    /proc/PID/task/TID/children).

    The walk goes through zombies: a killed multi-threaded process shows Z while its other
    threads still exit, and its children keep it as their parent until the last one has."""
    children: dict[int, list[int]] = {}
    zombies = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:  # gone meanwhile
            continue
        fields = stat.rpartition(b")")[2].split()  # the command name may hold spaces and ')'
        if len(fields) < 2:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
        if fields[0] == b"Z":
            zombies.add(int(entry))
    found, todo = [], [root]
    while todo:
        for pid in children.get(todo.pop(), []):
            if pid not in zombies:
                found.append(pid)
            todo.append(pid)
    return found


def stop_descendants(grace_s: float) -> None:
    """SIGTERM every descendant, SIGKILL after grace_s (at once when grace_s is 0); reap them."""
    start = time.monotonic()
    while True:
        _reap()
        left = descendants(os.getpid())
        if not left:
            return
        waited = time.monotonic() - start
        if waited >= GIVE_UP_S + grace_s:
            try:  # stderr may be a pipe whose reader died with our parent
                print(f"guard: processes {left} survived SIGKILL for {GIVE_UP_S:g}s; giving up", file=sys.stderr)
            except OSError:
                pass
            return
        sig = signal.SIGKILL if waited >= grace_s else signal.SIGTERM
        for pid in left:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        time.sleep(0.02)


def _reap() -> dict[int, int]:
    """Collect every exited child without blocking: {pid: wait status}."""
    done = {}
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return done
        if pid == 0:
            return done
        done[pid] = status


def _parent_gone(signum, frame) -> None:
    global _stopping
    # The death signal comes again for every thread of the parent that exits after the one that
    # started us (the kernel re-parents us to each in turn). A nested call that walked the tree
    # while a killed tool was half gone would miss its children and end the guard early.
    if _stopping:
        return
    _stopping = True
    stop_descendants(grace_s=0)
    os._exit(128 + signum)


def _outlive(signum, frame) -> None:
    if _child is None:  # nothing started yet: nothing to wait for
        os._exit(128 + signum)


def _exec(cmd: list[str]) -> None:  # in the forked child
    for sig in (signal.SIGPIPE, signal.SIGXFSZ):  # Python ignores these; tools expect the default
        signal.signal(sig, signal.SIG_DFL)
    try:
        os.execvp(cmd[0], cmd)
    except OSError as err:
        print(f"guard: cannot run {cmd[0]}: {err}", file=sys.stderr, flush=True)
    os._exit(127)


def _end_like(status: int) -> None:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig != signal.SIGKILL:  # SIGKILL has no handler to reset
            signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
        time.sleep(1)  # the signal is delivered before this returns; a blocked one falls through
        os._exit(128 + sig)
    os._exit(os.waitstatus_to_exitcode(status))


def _become(cmd: list[str], death_signal: int, parent: int | None) -> None:
    """CMD in this process's place, SIGNAL sent to it when the parent dies (no subreaper, no fork)."""
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, death_signal, 0, 0, 0)
    if parent is not None and os.getppid() != parent:  # it died before the death signal was set
        os._exit(128 + death_signal)
    _exec(cmd)


def main(argv: list[str]) -> None:
    global _child
    parent = become = None
    if argv[:1] == ["--parent"]:
        parent, argv = int(argv[1]), argv[2:]
    if argv[:1] == ["--become"]:
        become, argv = int(argv[1]), argv[2:]
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        print("usage: guard.py [--parent PID] [--become SIGNAL] -- CMD ARGS...", file=sys.stderr)
        os._exit(2)
    if become is not None:
        _become(argv, become, parent)
    signal.signal(PARENT_GONE, _parent_gone)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    libc.prctl(_PR_SET_PDEATHSIG, PARENT_GONE, 0, 0, 0)
    if parent is not None and os.getppid() != parent:  # it died before the death signal was set
        os._exit(128 + PARENT_GONE)
    for sig in (signal.SIGTERM, signal.SIGINT):
        if signal.getsignal(sig) is not signal.SIG_IGN:  # an ignored SIGINT stays ignored for CMD
            signal.signal(sig, _outlive)
    # Held over the fork: a group SIGTERM between fork and `_child = pid` would find no child yet and end
    # the guard while CMD runs on unguarded. Delivered after, it finds the child (and the child got it too).
    stop = {signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, stop)
    pid = os.fork()
    if pid == 0:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, stop)  # a pending one ends the child before CMD starts
        _exec(argv)
    _child = pid
    signal.pthread_sigmask(signal.SIG_UNBLOCK, stop)
    while True:
        try:
            done, status = os.waitpid(-1, 0)
        except ChildProcessError:  # cannot happen while CMD runs; be safe
            os._exit(1)
        if done == pid:
            break
    stop_descendants(LEFTOVER_GRACE_S)
    _end_like(status)


if __name__ == "__main__":
    main(sys.argv[1:])
