"""What an engine does with each step's output: turn one row of target logits into a token (greedy, or
temperature/top-k/top-p), stream the text so far with stop strings, and count the speculation.

Decoding token by token breaks multi-byte characters and byte-level/sentencepiece spaces,
so every push decodes the whole output and emits only the new, settled suffix.
"""
from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field, fields

import torch

# Below this temperature sampling is greedy, as in vLLM (its _SAMPLING_EPS).
GREEDY_EPS = 1e-5
REPLACEMENT = "\ufffd"  # what a partial UTF-8 sequence decodes to until its last byte arrives


class Sampler:
    """Per-request token picker; a seed makes one request's sampling reproducible."""

    def __init__(
        self,
        temperature: float = 0.0,
        top_p: float = 1.0,
        top_k: int = 0,
        seed: int | None = None,
    ) -> None:
        if temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {temperature}")
        if not 0 < top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {top_p}")
        if top_k < 0:
            raise ValueError(f"top_k must be >= 0 (0 disables it), got {top_k}")
        self.greedy = temperature < GREEDY_EPS
        self.temperature = temperature
        self.top_p = top_p
        self.top_k = top_k
        self.generator = None
        if not self.greedy:
            self.generator = torch.Generator()
            if seed is None:
                self.generator.seed()
            else:
                self.generator.manual_seed(seed)

    def pick(self, logits: torch.Tensor) -> int:
        """One token from a 1-D logits row."""
        if self.greedy:
            return int(torch.argmax(logits))
        probs = torch.softmax(self._filtered(logits.float() / self.temperature), dim=-1)
        return int(torch.multinomial(probs, 1, generator=self.generator))

    def _filtered(self, logits: torch.Tensor) -> torch.Tensor:
        if self.top_k and self.top_k < logits.numel():
            kth = torch.topk(logits, self.top_k).values[-1]
            logits = logits.masked_fill(logits < kth, float("-inf"))
        if self.top_p < 1.0:
            sorted_logits, order = torch.sort(logits, descending=True)
            probs = torch.softmax(sorted_logits, dim=-1)
            # Drop a token once the mass before it already reaches top_p; the first always stays.
            drop_sorted = (probs.cumsum(dim=-1) - probs) >= self.top_p
            drop = torch.zeros_like(drop_sorted).scatter(0, order, drop_sorted)
            logits = logits.masked_fill(drop, float("-inf"))
        return logits


class TextStream:
    """Feeds on the full list of generated ids; returns text deltas that will never change."""

    def __init__(self, tokenizer, stop: Sequence[str] | None = None) -> None:
        self.tokenizer = tokenizer
        self.stop = [s for s in (stop or []) if s]
        # A stop string may be arriving token by token: hold back what could be its start.
        self.hold = max((len(s) for s in self.stop), default=1) - 1
        self.sent = 0
        self.stopped = False

    def push(self, ids: Sequence[int], final: bool = False) -> str:
        """Delta for the output so far; `final` flushes everything held back."""
        if self.stopped:
            return ""
        text = self.tokenizer.decode(
            list(ids), skip_special_tokens=True, clean_up_tokenization_spaces=False
        )
        cut = self._first_stop(text)
        if cut is not None:
            self.stopped = True
            return self._emit(text, cut)
        if final:
            return self._emit(text, len(text))
        settled = len(text.rstrip(REPLACEMENT))
        return self._emit(text, min(settled, len(text) - self.hold))

    def _first_stop(self, text: str) -> int | None:
        # Text already sent never contains a whole stop string (the hold-back guarantees
        # it), so the search can start at the first unsent character's possible stop start.
        begin = max(0, self.sent - self.hold)
        hits = [i for i in (text.find(s, begin) for s in self.stop) if i >= 0]
        return min(hits) if hits else None

    def _emit(self, text: str, end: int) -> str:
        if end <= self.sent:
            return ""
        delta = text[self.sent:end]
        self.sent = end
        return delta


# Named after vLLM's spec_decode metrics so dashboards line up.
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
