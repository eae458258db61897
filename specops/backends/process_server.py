"""A server run as a process group specops owns: started under the guard, probed until ready, watched, stopped.

For servers that are one command on this host (vLLM's OpenAI server from the vLLM CPU venv). The
command runs under specops/host/guard.py in a session of its own, so it and every process it starts
(vLLM's engine core and workers) die with this process, even by SIGKILL; stop() SIGTERMs the whole
group and SIGKILLs it after the bound, so a server that ignores SIGTERM is still gone in time.
"""
from __future__ import annotations

import logging
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import psutil

from specops.cost.meter import process_tree_cpu_seconds
from specops.host import processes as proc
from specops.host.liveness import exit_cause, process_state
from specops.triton.client import Endpoint
from specops.triton.server_log import port_clash

log = logging.getLogger(__name__)


class ProcessStartError(RuntimeError):
    """The server exited or never became ready; the message carries its log tail."""


class ProcessStopError(RuntimeError):
    """Processes or ports outlived stop()."""


class ProcessServer:
    """`ProcessServer(argv, env, log, probe, ...).start().wait_ready(600)`; `probe(timeout_s)` is True once
    the server answers. Implements specops.backends.base.Server."""

    def __init__(self, argv: Sequence[str], env: Mapping[str, str], log_path: Path,
                 probe: Callable[[float], bool], *, name: str, version: tuple[str, str], endpoint: Endpoint):
        self.argv, self.env, self.log_path = list(argv), dict(env), Path(log_path)
        self.probe, self.name, self._version = probe, name, version
        self.endpoint = endpoint
        self.host, self.ports = endpoint.host, sorted({endpoint.http_port, endpoint.grpc_port, endpoint.metrics_port})
        self._proc: subprocess.Popen | None = None
        self._create_time: float | None = None
        self.pid: int | None = None  # kept after stop: the janitor's record is removed by it
        self._log_offset = 0
        self._started = 0.0

    def start(self) -> ProcessServer:
        if self._proc is not None:
            raise RuntimeError(f"{self.name} already started")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as fh:
            self._log_offset = fh.tell()
            fh.write(f"# specops launch: {' '.join(self.argv)}\n".encode())
            fh.flush()
            self._proc = proc.spawn_guarded(self.argv, self.env, stdin=subprocess.DEVNULL, stdout=fh,
                                            stderr=subprocess.STDOUT)
        self._started = time.monotonic()
        self.pid = self._proc.pid
        self._create_time = psutil.Process(self.pid).create_time()
        log.info("%s pid %d starting: %s", self.name, self._proc.pid, " ".join(self.argv))
        return self

    def wait_ready(self, deadline_s: float) -> None:
        """Block until the probe answers; raise with the log tail when the server exits or the deadline passes."""
        assert self._proc is not None, "not started"
        deadline = time.monotonic() + deadline_s
        while True:
            code = self._proc.poll()
            if code is not None:
                raise ProcessStartError(f"{self.name} {exit_cause(code)} before it was ready; log {self.log_path} "
                                        f"ends with:\n{self.log_tail()}")
            if self.probe(2.0):
                log.info("%s ready in %.1fs", self.name, time.monotonic() - self._started)
                return
            if time.monotonic() >= deadline:
                raise ProcessStartError(f"{self.name} not ready within {deadline_s:.0f}s; log {self.log_path} "
                                        f"ends with:\n{self.log_tail()}")
            time.sleep(0.5)

    def stop(self, timeout_s: float, ports_ours: bool = True) -> None:
        """SIGTERM the group, SIGKILL after timeout_s, strays reaped, ports checked free (unless another listener
        holds them: `ports_ours` false). Idempotent."""
        if self._proc is None:
            return
        popen, self._proc = self._proc, None
        t0 = time.monotonic()
        survivors = proc.kill_process_tree(popen, timeout_s)
        busy = proc.wait_ports_free(self.host, self.ports, timeout_s=5.0) if ports_ours else []
        log.info("%s pid %d stopped in %.1fs (exit %s)", self.name, popen.pid, time.monotonic() - t0,
                 popen.returncode)
        if survivors or busy:
            raise ProcessStopError(f"after stopping {self.name} pid {popen.pid}: processes alive "
                                   f"{[p.pid for p in survivors]}, ports still bound {busy}")

    # --- what the watchdog and the pipeline ask ------------------------------------------------
    def describe(self) -> str:
        return f"{self.name} pid {self.pid}"

    def state(self) -> str | None:
        return process_state(self._proc)

    def answers(self, timeout_s: float) -> bool:
        return self.probe(timeout_s)

    def log_tail(self, lines: int = 20) -> str:
        try:
            with open(self.log_path, "rb") as fh:
                fh.seek(self._log_offset)
                kept = fh.read().decode("utf-8", "replace").rstrip("\n").splitlines()[-lines:]
        except FileNotFoundError:
            return "(no log)"
        return "\n".join(kept) if kept else "(no output)"

    def cpu_seconds(self) -> float:
        assert self._proc is not None, "not running"
        return process_tree_cpu_seconds(self._proc.pid, self._create_time)

    def version(self) -> tuple[str, str]:
        return self._version

    def port_clashed(self) -> bool:
        """Whether this launch's log says another listener had its port (taken between the pick and the bind)."""
        try:
            with open(self.log_path, "rb") as fh:
                fh.seek(self._log_offset)
                return port_clash(fh.read().decode("utf-8", "replace"))
        except FileNotFoundError:
            return False

    def record(self) -> dict[str, Any]:
        tool, version = self._version
        return {"pid": self.pid, "create_time": self._create_time, "ports": self.ports, "tool": tool,
                "version": version}


PORT_ATTEMPTS = 3  # as tritonserver's starts (specops/backends/triton_server.py port_attempts)


def start_on_free_ports(make: Callable[[], ProcessServer], ready_timeout_s: float, stop_timeout_s: float,
                        fixed_port: bool = False, attempts: int = PORT_ATTEMPTS) -> ProcessServer:
    """`make()`'s server started and ready. `make` picks free ports each time it is called: a start whose port another
    listener took between the pick and the bind (its log says so) is made again on new ports, as tritonserver's is,
    up to `attempts` times; not when the profile fixes the port. Any failure stops what was started."""
    for attempt in range(1, attempts + 1):
        server = make().start()
        try:
            server.wait_ready(ready_timeout_s)
            return server
        except ProcessStartError:
            clashed = server.port_clashed()  # then its ports are the other listener's: not waited for
            proc.teardown_quietly(lambda server=server, ours=not clashed: server.stop(stop_timeout_s, ports_ours=ours),
                                  f"stopping the {server.name}")
            if fixed_port or attempt == attempts or not clashed:
                raise
            log.warning("%s: another listener took its port %s; starting it again on new ports (attempt %d of %d)",
                        server.name, server.endpoint.http_port, attempt + 1, attempts)
        except BaseException:
            proc.teardown_quietly(lambda server=server: server.stop(stop_timeout_s), f"stopping the {server.name}")
            raise
    raise AssertionError("unreachable")
