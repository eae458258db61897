"""Speculation counters, named after vLLM's spec_decode metrics so dashboards line up."""
from __future__ import annotations

import threading
from dataclasses import dataclass, field, fields


@dataclass
class SpecCounters:
    """Cumulative over the engine's life; updated once per decode step under a lock.

    num_accepted_tokens counts what verification accepted, before an output is cut short by
    EOS or a stop string; num_generated_tokens counts tokens actually appended to outputs.
    """

    num_drafts: int = 0  # verification steps that carried at least one draft token
    num_draft_tokens: int = 0
    num_accepted_tokens: int = 0
    accepted_per_position: list[int] = field(default_factory=list)
    num_steps: int = 0  # decode forward passes (plain and verification), prefill excluded
    num_generated_tokens: int = 0
    # Wall time inside the proposer and inside verification forwards: the measured draft and
    # verification costs the analytical speedup bound is computed from.
    draft_seconds: float = 0.0
    verify_seconds: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def record_step(self, drafted: int, accepted: int, generated: int,
                    draft_s: float = 0.0, verify_s: float = 0.0) -> None:
        with self._lock:
            self.num_steps += 1
            self.draft_seconds += draft_s
            self.verify_seconds += verify_s
            self.num_generated_tokens += generated
            if drafted == 0:
                return
            self.num_drafts += 1
            self.num_draft_tokens += drafted
            self.num_accepted_tokens += accepted
            if len(self.accepted_per_position) < drafted:
                self.accepted_per_position.extend([0] * (drafted - len(self.accepted_per_position)))
            for pos in range(accepted):
                self.accepted_per_position[pos] += 1

    def snapshot(self) -> dict[str, int | list[int]]:
        """A consistent copy of every counter (read together, under the lock)."""
        with self._lock:
            counters = {f.name: getattr(self, f.name) for f in fields(self) if f.compare}
            counters["accepted_per_position"] = list(self.accepted_per_position)
            return counters
