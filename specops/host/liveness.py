"""Notice a server that dies or freezes while a phase talks to it, within seconds, not at a timeout.

A client blocked on a dead socket (perf_analyzer, a gRPC stream) can wait for minutes; a frozen
server (SIGSTOP, a deadlock) answers nothing and closes nothing. So while a phase works, the
watchdog asks the server itself: is its process (or container) still running, and does its
readiness endpoint answer? The first question is answered by the kernel or the Docker daemon at
once; the second only fails after `stall_s` of unbroken silence, since a loaded server on busy
cores answers late (see STALL_S).
"""
from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol, TypeVar

import psutil

from specops.host.processes import descendants

T = TypeVar("T")

POLL_S = 1.0
# Readiness probes of the embedded tritonserver while genai-perf drove it at concurrency 4 on
# this host's 2 busy cores: median 4 ms, p99 22 ms, max 96 ms over 323 probes
# (benchmarks/liveness_bench.py). A probe gets PROBE_TIMEOUT_S, and a server that answers none
# for STALL_S is declared frozen: 80x the worst latency seen, yet noticed within ~10 s.
PROBE_TIMEOUT_S = 3.0
STALL_S = 8.0
# A request that fails because the server died sees its socket close a moment before the
# process's exit is visible: look for the cause for this long before blaming the request.
EXPLAIN_GRACE_S = 2.0
TAIL_LINES = 10  # of the server's log, in the message (the whole log stays in the run directory)


class Watched(Protocol):
    """What the watchdog asks of a server (backends' Server objects provide it)."""

    log_path: Path

    def describe(self) -> str: ...

    def state(self) -> str | None: ...

    def answers(self, timeout_s: float) -> bool: ...

    def log_tail(self, lines: int = 20) -> str: ...


class Watch(Protocol):
    """What a tool run asks of whatever watches its servers (a Watchdog, or Watchdogs for several)."""

    def check(self) -> None: ...

    def explain(self, error: BaseException) -> None: ...


class ServerDown(RuntimeError):
    """The server died, stopped or stalled while a phase was talking to it."""

    def __init__(self, server: str, cause: str, phase: str, log_path: Path | None, tail: str):
        self.server, self.cause, self.phase = server, cause, phase
        where = f"; its log {log_path} ends with:\n{tail}" if log_path else ""
        super().__init__(f"during the {phase}, {server} {cause}{where}")


class Watchdog:
    """`watch.check()` raises ServerDown once the server is gone or silent for `stall_s`;
    `watch.call(fn)` runs a blocking client call and gives it up when the server goes."""

    def __init__(self, server: Watched, phase: str, *, poll_s: float = POLL_S, stall_s: float = STALL_S,
                 probe_timeout_s: float = PROBE_TIMEOUT_S, clock: Callable[[], float] = time.monotonic):
        self.server, self.phase = server, phase
        self.poll_s, self.stall_s, self.probe_timeout_s = poll_s, stall_s, probe_timeout_s
        self._clock = clock
        self._last_check = float("-inf")
        self._silent_since: float | None = None
        self._lock = threading.Lock()  # synthesis asks from several request threads

    def check(self) -> None:
        """At most once per poll interval: raise ServerDown if the server is gone or has stalled."""
        with self._lock:
            now = self._clock()
            if now - self._last_check < self.poll_s:
                return
            self._last_check = now
            self._check(now)

    def _check(self, now: float) -> None:
        self._raise_if_gone()
        if self.server.answers(self.probe_timeout_s):
            self._silent_since = None
            return
        self._raise_if_gone()  # the probe may have failed because the server just died
        if self._silent_since is None:
            self._silent_since = now
        elif self._clock() - self._silent_since >= self.stall_s:
            silent = self._clock() - self._silent_since
            self.fail(f"stopped answering its readiness probe for {silent:.0f}s (frozen or overloaded)")

    def explain(self, error: BaseException) -> None:
        """A client call failed: if the server is the cause, raise ServerDown from `error`."""
        deadline = self._clock() + EXPLAIN_GRACE_S
        while True:
            try:
                self._raise_if_gone()
            except ServerDown as down:
                raise down from error
            if self._clock() >= deadline:
                return
            time.sleep(0.1)

    def call(self, fn: Callable[[], T]) -> T:
        """fn() in a helper thread, checked every poll interval. When the server goes, ServerDown
        is raised here; the abandoned call ends when teardown closes the server's sockets."""
        box: dict[str, object] = {}

        def target() -> None:
            try:
                box["value"] = fn()
            except BaseException as exc:  # handed to the caller's thread
                box["error"] = exc

        worker = threading.Thread(target=target, name=f"watched-{self.phase}", daemon=True)
        worker.start()
        while worker.is_alive():
            worker.join(self.poll_s)
            if worker.is_alive():
                self.check()
        if "error" in box:
            error = box["error"]
            assert isinstance(error, BaseException)
            self.explain(error)
            raise error
        return box["value"]  # type: ignore[return-value]

    def fail(self, cause: str) -> None:
        raise ServerDown(self.server.describe(), cause, self.phase, self.server.log_path,
                         self.server.log_tail(TAIL_LINES))

    def _raise_if_gone(self) -> None:
        state = self.server.state()
        if state is not None:
            self.fail(state)


def process_state(popen: subprocess.Popen | None) -> str | None:
    """Why a server process cannot serve (stopped by us, exited, killed, frozen); None while it can. A frozen
    child (SIGSTOP) stalls every request it takes as surely as a frozen parent, so the whole tree is looked at."""
    if popen is None:
        return "was stopped"
    code = popen.poll()
    if code is not None:
        return exit_cause(code)
    try:
        frozen = [p for p in [psutil.Process(popen.pid), *descendants(popen.pid)]
                  if p.status() in (psutil.STATUS_STOPPED, psutil.STATUS_TRACING_STOP)]
    except psutil.NoSuchProcess:
        return "exited"
    return f"is stopped (SIGSTOP: pid {frozen[0].pid}) and answers nothing" if frozen else None


def exit_cause(returncode: int) -> str:
    """A process's end as a person would say it: 'was killed by SIGKILL', 'exited with code 1'."""
    import signal  # noqa: PLC0415

    if returncode < 0:
        try:
            return f"was killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"was killed by signal {-returncode}"
    return f"exited with code {returncode}"


class Watchdogs:
    """Several servers watched as one (an interleaved run drives them all): the first one down is named."""

    def __init__(self, dogs: list[Watchdog]):
        self.dogs = dogs

    def check(self) -> None:
        for dog in self.dogs:
            dog.check()

    def explain(self, error: BaseException) -> None:
        for dog in self.dogs:
            dog.explain(error)
