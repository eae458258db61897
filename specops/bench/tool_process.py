"""Run a load generator's CLI: its own process group, output to a log (and a progress callback), bounded.

On timeout, error or KeyboardInterrupt the whole group gets SIGTERM, then SIGKILL after
KILL_GRACE_S, so no client process (genai-perf's perf_analyzer, AIPerf's workers) outlives it.
"""
from __future__ import annotations

import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from specops.processes import kill_process_tree

KILL_GRACE_S = 5.0


class ToolExitError(RuntimeError):
    """The tool exited non-zero; the message ends with its log's last lines."""


class ToolTimeoutError(ToolExitError, TimeoutError):
    """The tool outlived its time budget and was killed."""


def run_logged(name: str, cmd: Sequence[str], env: Mapping[str, str], log_path: Path, timeout_s: float,
               on_line: Callable[[str], None] | None = None,
               errors: tuple[type[ToolExitError], type[ToolExitError]] = (ToolExitError, ToolTimeoutError)) -> None:
    """Run cmd to completion within timeout_s; raise errors[0] on a non-zero exit, errors[1] on timeout."""
    exit_error, timeout_error = errors
    log_path = Path(log_path)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("w", encoding="utf-8") as log:
        log.write("$ " + " ".join(cmd) + "\n")
        log.flush()
        proc = subprocess.Popen(list(cmd), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=dict(env), start_new_session=True, text=True, errors="replace")
        pump = threading.Thread(target=_pump, args=(proc, log, on_line), daemon=True)
        pump.start()
        try:
            code = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            kill_process_tree(proc, KILL_GRACE_S)
            raise timeout_error(f"{name} exceeded {timeout_s:g}s; killed (log: {log_path})") from None
        except BaseException:
            kill_process_tree(proc, KILL_GRACE_S)
            raise
        finally:
            pump.join(timeout=KILL_GRACE_S)
    if code != 0:
        raise exit_error(f"{name} exited {code} (log: {log_path}):\n{log_tail(log_path)}")


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
