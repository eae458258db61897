"""What one run measured: a row per variant, and the verdict."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass
class Acceptance:
    """Speculation counters over the benchmark window, under one definition for every backend."""

    source: str  # where the counters came from, e.g. "triton metrics (spec_decode_*)"
    num_drafts: float = 0.0  # verification steps that carried draft tokens
    num_draft_tokens: float = 0.0
    num_accepted_tokens: float = 0.0
    # Whether the counters see the benchmark's own requests (server-side counters do); per-response
    # metrics that only specops' check requests ask for cover those requests alone.
    covers_benchmark: bool = True

    def since(self, earlier: "Acceptance | None") -> "Acceptance":
        """Counters accumulated after `earlier` (the benchmark window, without checks/smoke);
        counters that never see the benchmark stay as they are (over the check requests)."""
        if earlier is None or not self.covers_benchmark:
            return self
        return Acceptance(
            self.source,
            self.num_drafts - earlier.num_drafts,
            self.num_draft_tokens - earlier.num_draft_tokens,
            self.num_accepted_tokens - earlier.num_accepted_tokens,
        )

    @property
    def acceptance_rate(self) -> float | None:
        return self.num_accepted_tokens / self.num_draft_tokens if self.num_draft_tokens else None

    @property
    def mean_accepted_per_step(self) -> float | None:
        """Tokens emitted per verification step: accepted drafts plus the target's own token."""
        return 1.0 + self.num_accepted_tokens / self.num_drafts if self.num_drafts else None


@dataclass
class VariantResult:
    variant: str  # "speculative" | "base"
    method: str
    model: str
    metrics: dict[str, float]  # genai-perf figures, see specops.bench.genai_perf.parse_exports
    acceptance: Acceptance | None = None
    timings: dict[str, float] = field(default_factory=dict)  # seconds per phase

    def row(self) -> dict:
        out = {"variant": self.variant, "method": self.method, "model": self.model, **self.metrics}
        if self.acceptance is not None:
            out |= {
                "acceptance_source": self.acceptance.source,
                "num_drafts": self.acceptance.num_drafts,
                "num_draft_tokens": self.acceptance.num_draft_tokens,
                "num_accepted_tokens": self.acceptance.num_accepted_tokens,
                "acceptance_rate": self.acceptance.acceptance_rate,
                "mean_accepted_per_step": self.acceptance.mean_accepted_per_step,
            }
        return out | {f"{k}_s": v for k, v in self.timings.items()}

    def to_dict(self) -> dict:
        return asdict(self)
