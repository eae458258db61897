"""Choosing the draft length from measured costs and measured acceptance.

On a CPU, verifying k drafts costs a forward over k+1 tokens, which is not flat in k (here
~1.3x of a plain step for 2 tokens, ~1.4x for 4, ~2x for 7; see specops.runtime.verify_gemm),
and each drafted token costs proposer time. The expected tokens per step for length k is 1 +
the sum of the probabilities that the first 1..k drafts are all accepted. The policy picks the k (up to the
profile's num_speculative_tokens) with the most expected tokens per second, from running
measurements; now and then it tries another length to keep every estimate current.
"""
from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass, field
from statistics import median

PRIOR_WEIGHT = 4.0  # pseudo-observations behind the prior acceptance of an unmeasured position
PRIOR_ACCEPT = 0.6  # optimistic: a method is given the chance to show what it accepts
EXPLORE_EVERY = 16  # every Nth step tries another length, so every length stays measured
RECENT = 9  # cost samples kept per length


@dataclass
class DraftLengthPolicy:
    max_len: int
    drafted: list[int] = field(default_factory=list)  # steps whose draft reached position i
    accepted: list[int] = field(default_factory=list)  # ... and whose first i+1 drafts were accepted
    # Recent samples only, and their median: the first steps of a server (cold caches,
    # allocation) cost many times a warm step, and a mean would remember them for hundreds
    # of steps of a rarely explored length.
    verify_s: dict[int, deque] = field(default_factory=dict)  # tokens verified -> recent seconds
    draft_s: deque = field(default_factory=lambda: deque(maxlen=RECENT))  # recent seconds per drafted token
    steps: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        self.drafted = [0] * self.max_len
        self.accepted = [0] * self.max_len

    def choose(self) -> int:
        """The draft length to ask the proposer for at this step."""
        with self._lock:
            self.steps += 1
            lengths = self.max_len + 1
            # First every length twice, to measure what each costs; later one step in
            # EXPLORE_EVERY keeps cycling through them, since costs drift with load.
            if self.steps <= 2 * lengths:
                return (lengths - 1) - (self.steps - 1) % lengths
            if self.steps % EXPLORE_EVERY == 0:
                return (lengths - 1) - (self.steps // EXPLORE_EVERY) % lengths
            return max(range(lengths), key=self._rate)

    def record(self, drafted: int, accepted: int, draft_s: float, verify_s: float) -> None:
        with self._lock:
            for i in range(min(drafted, self.max_len)):
                self.drafted[i] += 1
                self.accepted[i] += i < accepted
            self.verify_s.setdefault(drafted + 1, deque(maxlen=RECENT)).append(verify_s)
            if drafted:
                self.draft_s.append(draft_s / drafted)

    def expected_tokens(self, k: int) -> float:
        total, prior = 1.0, 1.0
        for i in range(k):
            prior *= PRIOR_ACCEPT
            total += (self.accepted[i] + PRIOR_WEIGHT * prior) / (self.drafted[i] + PRIOR_WEIGHT)
        return total

    def _rate(self, k: int) -> float:
        return self.expected_tokens(k) / (self._verify_cost(k + 1) + k * self._draft_cost())

    def _verify_cost(self, tokens: int) -> float:
        seen = {n: median(samples) for n, samples in self.verify_s.items() if samples}
        if tokens in seen:
            return seen[tokens]
        if not seen:
            return 1.0  # nothing measured yet: every length costs the same, so draft
        # Unmeasured lengths cost like the nearest measured longer one (or the longest seen).
        longer = [n for n in seen if n >= tokens]
        return seen[min(longer)] if longer else max(seen.values())

    def _draft_cost(self) -> float:
        return median(self.draft_s) if self.draft_s else 0.0
