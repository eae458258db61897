"""How far a long step has got, reported through a callback the caller passes (the Prefect UI's
progress artifacts are one receiver; the core never knows which).

A step reports often (every answered prompt, optimizer step, tool output line); a receiver that
calls an API wants a few updates a minute. `Throttled` sits between them.
"""
from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable

# fraction done in [0, 1], and a one-line note on what is happening
Progress = Callable[[float, str], None]


class Throttled:
    """Passes a report on to `sink` at most once per `min_interval_s`, and only when the fraction
    moved; the first report and the first one at 1.0 always go through. Thread-safe: a tool's
    output is read on a thread of its own."""

    def __init__(self, sink: Progress, min_interval_s: float = 5.0,
                 clock: Callable[[], float] = time.monotonic):
        self.sink, self.min_interval_s, self.clock = sink, min_interval_s, clock
        self.sent: float | None = None  # the last fraction passed on
        self._at = -math.inf
        self._lock = threading.Lock()

    def __call__(self, fraction: float, note: str = "") -> None:
        fraction = min(1.0, max(0.0, fraction))
        with self._lock:
            if self.sent == 1.0 or fraction == self.sent:
                return
            now = self.clock()
            if self.sent is not None and fraction < 1.0 and now - self._at < self.min_interval_s:
                return
            self.sent, self._at = fraction, now
        self.sink(fraction, note)


def within(progress: Progress, start: float, end: float) -> Progress:
    """A sub-step's progress mapped onto [start, end] of the whole (one round of several)."""
    return lambda fraction, note: progress(start + (end - start) * min(1.0, max(0.0, fraction)), note)
