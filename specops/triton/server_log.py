"""What one launch's part of a tritonserver log says (each launch appends, and reads from its own offset on):
the tail worth showing, a port clash, how a stop ended."""
from __future__ import annotations

import re
import signal
from pathlib import Path

_NOISE = re.compile(r"^\s*[|+]|CudaDriverHelper has not been initialized")  # status tables, CPU-only noise
_EXIT_TIMEOUT = "Exit timeout expired"  # tritonserver's words when it stops with a model still loaded
_PORT_CLASH = re.compile(r"already in use|Address already in use|failed to start .*(HTTP|GRPC|Metrics)", re.I)


def launch_text(log_file: Path, offset: int) -> str | None:
    """What the log gained from `offset` on; None when there is no log."""
    try:
        with open(log_file, "rb") as fh:
            fh.seek(offset)
            return fh.read().decode("utf-8", "replace")
    except FileNotFoundError:
        return None


def tail(text: str | None, lines: int) -> str:
    """The last `lines` of a launch's log, ASCII tables and CUDA noise dropped, scrolled-off error lines kept."""
    if text is None:
        return "(no log)"
    kept = [ln for ln in text.splitlines() if ln.strip() and not _NOISE.search(ln)]
    tail = kept[-lines:]
    errors = [ln for ln in kept[:-lines] if ln.startswith("E")][-5:]  # scrolled-off errors
    return "\n".join([*errors, "...", *tail] if errors else tail)


def port_clash(text: str | None) -> bool:
    return bool(_PORT_CLASH.search(text or ""))


def stop_note(returncode: int | None, text: str | None, exit_timeout_s: int) -> str | None:
    """How a stop we asked for explains this exit ("" for a clean one), None when it does not.

    tritonserver exits 1 after SIGTERM when a model is still loaded at --exit-timeout-secs (main.cc: "failed
    to stop server: Internal - Exit timeout expired. Exiting immediately."): here most stops of the Python
    backend end so, the stub not yet told to finalize when the timeout passes (py-spy: its worker idle,
    finalize() not called), so this is a stop, not a failure."""
    if returncode == 0:
        return ""
    if returncode == -signal.SIGKILL:
        return " (SIGKILL: it outlived SIGTERM)"
    if returncode == 1 and _EXIT_TIMEOUT in (text or ""):
        return f" (a model still loaded at its {exit_timeout_s}s exit timeout: tritonserver exits 1 then)"
    return None
