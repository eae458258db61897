"""Turning one row of target logits into one token: greedy, or temperature/top-k/top-p."""
from __future__ import annotations

import torch

# Below this temperature sampling is greedy, as in vLLM (its _SAMPLING_EPS).
GREEDY_EPS = 1e-5


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
