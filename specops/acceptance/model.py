"""Acceptance: speculation counters over a benchmark window, under one definition for every backend."""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Acceptance(BaseModel):
    """Counters of one served variant, from the backend's own source (named in `source`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: str  # where the counters came from, e.g. "Triton metrics port (spec_decode_* ...)"
    num_drafts: float = 0.0  # verification steps that carried draft tokens
    num_draft_tokens: float = 0.0
    num_accepted_tokens: float = 0.0
    # Accepted draft tokens at each draft position (0 = first drafted token), where the source has them.
    accepted_per_position: list[float] | None = None
    # Whether the counters see the benchmark's own requests (server-side counters do); per-response
    # metrics that only specops' check requests ask for cover those requests alone.
    covers_benchmark: bool = True
    # Engine step accounting, where the backend exports it (the embedded runtime does): every
    # decode step, tokens it emitted, and seconds spent drafting and verifying.
    num_steps: float | None = None
    num_emitted_tokens: float | None = None
    draft_seconds: float | None = None
    verify_seconds: float | None = None
    # False when the served framework has no acceptance source; `source` then says why.
    available: bool = True

    def __init__(self, source: str, num_drafts: float = 0.0, num_draft_tokens: float = 0.0,
                 num_accepted_tokens: float = 0.0, **fields) -> None:
        # Positional counters, as every parser reads them: (source, drafts, drafted, accepted).
        super().__init__(source=source, num_drafts=num_drafts, num_draft_tokens=num_draft_tokens,
                         num_accepted_tokens=num_accepted_tokens, **fields)

    @classmethod
    def unavailable(cls, where: str, why: str) -> Acceptance:
        """No counters exist for this server; the report says so instead of leaving a blank."""
        return cls(f"acceptance unavailable on {where}: {why}", available=False, covers_benchmark=False)

    def since(self, earlier: Acceptance | None) -> Acceptance:
        """Counters accumulated after `earlier` (the benchmark window, without checks/smoke);
        counters that never see the benchmark stay as they are (over the check requests)."""
        if earlier is None or not self.covers_benchmark or not self.available or not earlier.available:
            return self

        def minus(name: str) -> float | None:
            now, before = getattr(self, name), getattr(earlier, name)
            return None if now is None or before is None else now - before

        per_position = None
        if self.accepted_per_position is not None and earlier.accepted_per_position is not None:
            before = list(earlier.accepted_per_position)
            before += [0.0] * (len(self.accepted_per_position) - len(before))
            per_position = [now - then for now, then in zip(self.accepted_per_position, before)]
        return Acceptance(
            self.source,
            self.num_drafts - earlier.num_drafts,
            self.num_draft_tokens - earlier.num_draft_tokens,
            self.num_accepted_tokens - earlier.num_accepted_tokens,
            accepted_per_position=per_position,
            num_steps=minus("num_steps"),
            num_emitted_tokens=minus("num_emitted_tokens"),
            draft_seconds=minus("draft_seconds"),
            verify_seconds=minus("verify_seconds"),
        )

    def _per_step(self, total: float | None) -> float | None:
        """None where the engine reports no steps, or not this quantity."""
        return None if not self.num_steps or total is None else total / self.num_steps

    @property
    def tokens_per_step(self) -> float | None:
        """Tokens emitted per decode step, steps without drafts included."""
        return self._per_step(self.num_emitted_tokens)

    @property
    def step_seconds(self) -> float | None:
        """Mean wall time of one step inside the engine: drafting plus verification."""
        engine = None if self.verify_seconds is None else (self.draft_seconds or 0.0) + self.verify_seconds
        return self._per_step(engine)

    @property
    def draft_seconds_per_step(self) -> float | None:
        return self._per_step(self.draft_seconds)

    @property
    def acceptance_rate(self) -> float | None:
        return self.num_accepted_tokens / self.num_draft_tokens if self.num_draft_tokens else None

    @property
    def mean_accepted_per_step(self) -> float | None:
        """Tokens emitted per verification step: accepted drafts plus the target's own token."""
        return 1.0 + self.num_accepted_tokens / self.num_drafts if self.num_drafts else None

    @property
    def position_rates(self) -> list[float] | None:
        """Share of verification steps that accepted the draft at each position."""
        if not self.accepted_per_position or not self.num_drafts:
            return None
        return [count / self.num_drafts for count in self.accepted_per_position]


def analytical_bound(spec: Acceptance | None, base: Acceptance | None) -> float | None:
    """Speedup the measured acceptance allows at the measured costs, with zero serving overhead.

    tokens per step x (base step time) / (draft time + verification time per step): what the
    decode loop alone would give. The measured speedup falls short of it by everything outside
    the loop (Triton, streaming, detokenization, prefill).
    """
    if spec is None or base is None:
        return None
    tokens, spec_step, base_step = spec.tokens_per_step, spec.step_seconds, base.step_seconds
    if not tokens or not spec_step or not base_step:
        return None
    return tokens * base_step / spec_step
