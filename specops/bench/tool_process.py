"""Run a load generator's CLI: its own process group, output to a log (and a progress callback), bounded.

The tool runs under specops/host/guard.py, so nothing it starts outlives specops, SIGKILL included.

On timeout, error or KeyboardInterrupt the whole group gets SIGTERM, then SIGKILL after
KILL_GRACE_S, so no client process (genai-perf's perf_analyzer, AIPerf's workers) outlives it.
"""
from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from specops.host import tracking
from specops.host.liveness import Watch
from specops.host.processes import kill_process_tree, spawn_guarded, teardown_quietly

KILL_GRACE_S = 5.0
WAIT_POLL_S = 0.5  # how often a running tool's server is asked after (see specops.host.liveness)


class ToolExitError(RuntimeError):
    """The tool exited non-zero; the message ends with its log's last lines."""


class ToolTimeoutError(ToolExitError, TimeoutError):
    """The tool outlived its time budget and was killed."""


def run_logged(name: str, cmd: Sequence[str], env: Mapping[str, str], log_path: Path, timeout_s: float,
               on_line: Callable[[str], None] | None = None,
               errors: tuple[type[ToolExitError], type[ToolExitError]] = (ToolExitError, ToolTimeoutError),
               watch: Watch | None = None) -> None:
    """Run cmd to completion within timeout_s; raise errors[0] on a non-zero exit, errors[1] on timeout.

    With `watch`, the server the tool drives is checked while it runs: a server that dies or
    stalls kills the tool at once (ServerDown), instead of leaving it on a dead socket until
    the timeout; a tool that fails because its server died fails with ServerDown too.
    """
    exit_error, timeout_error = errors
    log_path = Path(log_path)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("w", encoding="utf-8") as log:
        log.write("$ " + " ".join(cmd) + "\n")
        log.flush()
        proc, record = _start(name, cmd, env, log_path)
        pump = threading.Thread(target=_pump, args=(proc, log, on_line), daemon=True)
        pump.start()
        deadline = time.monotonic() + timeout_s
        try:
            code = _wait(proc, deadline, watch)
        except subprocess.TimeoutExpired:
            teardown_quietly(lambda: kill_process_tree(proc, KILL_GRACE_S), f"killing {name}")
            raise timeout_error(f"{name} exceeded {timeout_s:g}s; killed (log: {log_path})") from None
        except BaseException:
            teardown_quietly(lambda: kill_process_tree(proc, KILL_GRACE_S), f"killing {name}")
            raise
        finally:
            pump.join(timeout=KILL_GRACE_S)
            if proc.poll() is not None:  # the guard ends last, after its tree; else the janitor finds it
                tracking.unregister(record)
    if code != 0:
        error = exit_error(f"{name} exited {code} (log: {log_path}):\n{log_tail(log_path)}")
        if watch is not None:
            watch.explain(error)
        raise error


def _wait(proc: subprocess.Popen, deadline: float, watch: Watch | None) -> int:
    """The tool's exit code; TimeoutExpired past the deadline; ServerDown from the watchdog."""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise subprocess.TimeoutExpired(proc.args, 0)
        try:
            return proc.wait(timeout=min(WAIT_POLL_S, left) if watch is not None else left)
        except subprocess.TimeoutExpired:
            if watch is not None:
                watch.check()


def _start(name: str, cmd: Sequence[str], env: Mapping[str, str], log_path: Path) -> tuple[subprocess.Popen, dict]:
    """The tool under specops/host/guard.py, which is its process group's leader: the tool and whatever
    it starts (perf_analyzer, AIPerf's workers) die with this process even when it is SIGKILLed,
    and stay recorded for the janitor until the guard has exited."""
    proc = spawn_guarded(cmd, env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                         text=True, errors="replace")
    return proc, tracking.track_process(proc.pid, "bench-tool", f"{name} ({log_path})")


def log_tail(log_path: Path, lines: int = 20) -> str:
    return "".join(Path(log_path).read_text(encoding="utf-8", errors="replace").splitlines(True)[-lines:])


def _pump(proc: subprocess.Popen, log, on_line: Callable[[str], None] | None) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        log.write(line)
        log.flush()
        if on_line is not None:
            try:
                on_line(line.rstrip("\n"))
            except Exception:  # a broken progress callback must not stall the pipe
                on_line = None
