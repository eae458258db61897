"""Process and port plumbing for servers we launch: free ports, spawn with a death signal, kill trees."""
from __future__ import annotations

import atexit
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from pathlib import Path
from typing import Any

import psutil

from specops.host import guard
from specops.settings import env_name

log = logging.getLogger(__name__)

# PR_SET_PDEATHSIG fires when the *thread* that forked the child exits, not the process. Prefect
# runs tasks in pool threads that come and go, so every spawn happens on this one long-lived
# thread: the signal then fires only when our process dies.
_spawners: dict[int, ThreadPoolExecutor] = {}  # per pid: a forked child has no spawner thread
_spawners_lock = threading.Lock()


# Credentials the pipeline may hold for downloads, which no tool or server it starts receives.
SECRET_ENV = frozenset({env_name("hf_token"), "HUGGING_FACE_HUB_TOKEN"})


def scrubbed_env(env: Mapping[str, str]) -> dict[str, str]:
    """A copy of env without the credentials."""
    return {k: v for k, v in env.items() if k not in SECRET_ENV}


def port_is_free(host: str, port: int) -> bool:
    """True when nothing listens on host:port (bind with SO_REUSEADDR, as servers do)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def pick_free_ports(host: str, count: int, avoid: Iterable[int] = ()) -> list[int]:
    """`count` distinct ports the kernel hands out as free on `host` (racy by nature: retry on clash)."""
    avoid = set(avoid)
    ports: list[int] = []
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    for _ in range(count * 20):
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            sock.bind((host, 0))
            port = sock.getsockname()[1]
        if port not in avoid and port not in ports:
            ports.append(port)
        if len(ports) == count:
            return ports
    raise RuntimeError(f"could not find {count} free ports on {host}")


def wait_ports_free(host: str, ports: Sequence[int], timeout_s: float) -> list[int]:
    """Poll until every port is free or the bound passes; return the ports still busy."""
    deadline = time.monotonic() + timeout_s
    while True:
        busy = [p for p in ports if not port_is_free(host, p)]
        if not busy or time.monotonic() >= deadline:
            return busy
        time.sleep(0.1)


# Groups spawn() started that kill_process_tree did not stop (a server starting when the run was interrupted), killed
# at exit: the death signal reaches the leader alone, and Triton's orphaned stubs ignore SIGTERM for up to 30 s.
_unstopped_groups: set[tuple[int, int]] = set()  # (the spawning pid, the group): a forked child kills none


@atexit.register
def _kill_unstopped_groups() -> None:
    for pgid in [pgid for owner, pgid in _unstopped_groups if owner == os.getpid()]:
        _signal_group(pgid, signal.SIGKILL)


def spawn(cmd: Sequence[str], env: Mapping[str, str], log_path: Path,
          death_signal: int = signal.SIGKILL) -> subprocess.Popen:
    """Start `cmd` in its own session, output appended to `log_path`, killed (its group too) if we die or exit: guard.py
    --become sets the death signal and is then `cmd` (the same pid), with no preexec_fn (why: guard.py)."""
    with open(log_path, "ab") as log_fh:
        popen = _on_spawner(_guarded(cmd, "--become", str(int(death_signal))), env=dict(env), stdin=subprocess.DEVNULL,
                            stdout=log_fh, stderr=subprocess.STDOUT, start_new_session=True)
    _unstopped_groups.add((os.getpid(), popen.pid))
    return popen


def spawn_guarded(cmd: Sequence[str], env: Mapping[str, str], **popen_kwargs: Any) -> subprocess.Popen:
    """Start `cmd` under specops/host/guard.py in its own session: the guard, `cmd` and everything
    `cmd` starts (however it daemonizes) die when this process dies, even by SIGKILL."""
    return _on_spawner(_guarded(cmd), env=dict(env), start_new_session=True, **popen_kwargs)


def _guarded(cmd: Sequence[str], *mode: str) -> list[str]:
    """`cmd` run through guard.py (in `mode`), told this process is its parent."""
    return [sys.executable, "-S", guard.__file__, "--parent", str(os.getpid()), *mode, "--", *cmd]


def _on_spawner(cmd: list[str], **popen_kwargs: Any) -> subprocess.Popen:
    """Popen on this process's one long-lived spawner thread (the death signal follows the thread that forked)."""
    with _spawners_lock:
        spawner = _spawners.get(os.getpid())
        if spawner is None:
            spawner = _spawners[os.getpid()] = ThreadPoolExecutor(1, thread_name_prefix="specops-spawner")
    return spawner.submit(subprocess.Popen, cmd, **popen_kwargs).result()


def descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []


# A SIGKILLed process is gone only once the kernel has freed its memory: seconds for a vLLM worker
# with a GiB of KV cache on a busy host (CI saw one alive 5 s after its SIGKILL).
KILLED_EXIT_S = 15.0


def kill_process_tree(proc: subprocess.Popen, timeout_s: float) -> list[psutil.Process]:
    """SIGTERM the process group, SIGKILL after `timeout_s`, then reap strays; return survivors.

    Descendants are recorded before signalling: once the leader dies they are re-parented and
    can no longer be found from it (and they may have left the group).
    """
    tree = descendants(proc.pid) + [p for p in group_members(proc.pid) if p.pid != proc.pid]
    _signal_group(proc.pid, signal.SIGTERM)
    # A stopped process (SIGSTOP: a frozen server the watchdog caught) keeps SIGTERM pending
    # until it is continued; without this it would always wait out the bound for SIGKILL.
    _signal_group(proc.pid, signal.SIGCONT)
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        log.warning("pid %d ignored SIGTERM for %.1fs: SIGKILL to its process group", proc.pid, timeout_s)
        _signal_group(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    tree += [p for p in descendants(proc.pid) + group_members(proc.pid) if p not in tree and p.pid != proc.pid]
    alive = wait_gone(tree, timeout_s=max(1.0, timeout_s / 2))
    for p in alive:
        log.warning("killing leftover process %d (%s)", p.pid, _described(p))
        _kill(p)
    _unstopped_groups.discard((os.getpid(), proc.pid))
    survivors = wait_gone(alive, timeout_s=KILLED_EXIT_S)
    remove_omp_registrations({proc.pid, *(p.pid for p in tree)} - {p.pid for p in survivors})
    return survivors


# libiomp5 (Intel's OpenMP, which specops preloads into every vLLM process: specops/backends/vllm/cpu.py) registers
# each process that starts OpenMP as /dev/shm/__KMP_REGISTERED_LIB_<pid>_<uid> and removes it only at a normal exit:
# every stopped server's processes (SIGTERM, SIGKILL) left theirs behind, for good (issue 51).
OMP_REGISTRATIONS = Path("/dev/shm")
_OMP_REGISTRATION = "__KMP_REGISTERED_LIB_{pid}_{uid}"


def remove_omp_registrations(pids: Iterable[int]) -> list[Path]:
    """The OpenMP registrations of these processes, which are gone, removed (this user's only); those removed."""
    removed = []
    for pid in pids:
        path = OMP_REGISTRATIONS / _OMP_REGISTRATION.format(pid=pid, uid=os.getuid())
        with suppress(FileNotFoundError):
            path.unlink()
            removed.append(path)
    return removed


def stale_omp_registrations() -> list[int]:
    """This user's processes that are gone but whose OpenMP registration is still there (killed runs: the janitor)."""
    suffix = f"_{os.getuid()}"
    pids = [int(pid) for path in OMP_REGISTRATIONS.glob(_OMP_REGISTRATION.format(pid="*", uid=os.getuid()))
            if (pid := path.name.removesuffix(suffix).rpartition("_")[2]).isdigit()]
    return [pid for pid in pids if not _running(pid)]


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def group_members(pgid: int) -> list[psutil.Process]:
    """The processes of a process group: a leader killed from outside leaves its children (Triton's stubs, which
    ignore SIGTERM until their handshake times out, 30 s) out of its tree but in its group."""
    found = []
    for p in psutil.process_iter():
        with suppress(OSError, psutil.Error):
            if os.getpgid(p.pid) == pgid:
                found.append(p)
    return found


def wait_gone(procs: list[psutil.Process], timeout_s: float) -> list[psutil.Process]:
    """Poll until none runs; return those still running. A zombie counts as gone: an orphan's
    parent is init, and this host's init reaps nothing (psutil.wait_procs would wait out every
    zombie's whole timeout)."""
    deadline = time.monotonic() + timeout_s
    while True:
        alive = [p for p in procs if running(p)]
        if not alive or time.monotonic() >= deadline:
            return alive
        time.sleep(0.05)


def running(p: psutil.Process) -> bool:
    """Alive and not a zombie."""
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _signal_group(pgid: int, sig: int) -> None:
    with suppress(ProcessLookupError):
        os.killpg(pgid, sig)


def _kill(p: psutil.Process) -> None:
    with suppress(psutil.NoSuchProcess):
        p.kill()


def _described(p: psutil.Process) -> str:
    """Its name and state (e.g. `VLLM::Worker, disk-sleep`), for the log."""
    try:
        return f"{p.name()}, {p.status()}"
    except psutil.Error:
        return "gone"


def teardown_quietly(teardown: Callable[[], object], what: str) -> None:
    """Run a teardown from an `except` block: its own failure is logged, not raised.

    Raised, it would replace the error that caused the teardown (a "ports still bound" from
    stop() hiding the "could not bind its ports" that made us stop), and that one says why.
    """
    try:
        teardown()
    except Exception as err:  # an interrupt still propagates
        log.warning("%s failed while handling an earlier error: %s: %s", what, type(err).__name__, err)
