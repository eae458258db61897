"""What every benchmark tool reports, typed: one run's aggregate figures and its requests (and the spread over
the prompts of the speedup paired from them)."""
from __future__ import annotations

import numpy as np
from pydantic import BaseModel, ConfigDict


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class BenchMetrics(Record):
    """Aggregates of one tool run (ms for latencies, per second for throughputs).

    Streaming-only figures (time to first token, inter-token latency) are None for a
    non-streaming run.
    """

    output_token_throughput_tok_s: float
    request_throughput_req_s: float
    request_latency_ms_avg: float
    request_latency_ms_p50: float
    request_latency_ms_p99: float
    time_to_first_token_ms_avg: float | None = None
    time_to_first_token_ms_p50: float | None = None
    time_to_first_token_ms_p99: float | None = None
    inter_token_latency_ms_avg: float | None = None
    inter_token_latency_ms_p50: float | None = None
    inter_token_latency_ms_p99: float | None = None
    output_sequence_length_avg: float
    input_sequence_length_avg: float | None = None
    request_count: int

    @classmethod
    def mean(cls, runs: list[BenchMetrics]) -> BenchMetrics:
        """Figures averaged over rounds (request counts summed)."""
        if not runs:
            raise ValueError("no benchmark rounds to average")
        out: dict[str, float | int | None] = {}
        for name in cls.model_fields:
            values = [getattr(r, name) for r in runs]
            if name == "request_count":
                out[name] = sum(values)
            elif any(v is None for v in values):
                out[name] = None
            else:
                out[name] = sum(values) / len(values)
        return cls(**out)


class RequestSample(Record):
    """One measured request, for pairing the variants prompt by prompt."""

    prompt: int  # index of the prompt in the benchmark's prompt list
    round: int
    latency_s: float  # request sent -> last response
    output_tokens: int
    ttft_s: float | None = None
    # Speculative decoding of this request as its server reported it (vLLM's per-request metrics, in the
    # response's `metrics.speculative_decoding`): verify steps, draft tokens accepted, draft tokens proposed.
    # Counts, so they sum over requests; mean acceptance length = 1 + accepted_tokens / spec_steps. None where
    # the server sent none (a base variant, or a server without per-request metrics).
    spec_steps: int | None = None
    accepted_tokens: int | None = None
    draft_tokens: int | None = None


class BenchRun(Record):
    """One tool run against one variant: its aggregates and its requests."""

    metrics: BenchMetrics
    samples: list[RequestSample]
    # measured prompt index -> the text its server answered, where the tool keeps it (AIPerf's raw export of an
    # interleaved run); the run writes them as its traffic log (answers/<variant>.jsonl), never into the record
    answers: dict[int, str] = {}


class PromptSpread(Record):
    """Each prompt's own speedup: its base seconds per output token over its speculative ones, its requests in
    every round pooled (results.speedup pools the same sums over all prompts for the headline). A prompt the
    drafter predicts well (one that loops) can carry the headline: its 5x shows here as the maximum."""

    by_prompt: dict[int, float]  # prompt index -> its speedup; the quantiles below are read from it

    def _quantile(self, q: float) -> float:
        return float(np.percentile(list(self.by_prompt.values()), q))  # linear interpolation

    minimum = property(lambda self: self._quantile(0))
    p25 = property(lambda self: self._quantile(25))
    median = property(lambda self: self._quantile(50))
    p75 = property(lambda self: self._quantile(75))
    maximum = property(lambda self: self._quantile(100))

    @property
    def max_prompt(self) -> int:
        """The prompt with the largest speedup."""
        return max(self.by_prompt, key=self.by_prompt.__getitem__)

    @property
    def prompts(self) -> int:
        return len(self.by_prompt)

    def text(self) -> str:
        """`16 prompts: min 0.95x, p25 1.02x, median 1.08x, p75 1.20x, max 5.10x at prompt 7`."""
        quantiles = ", ".join(f"{name} {value:.2f}x" for name, value in (
            ("min", self.minimum), ("p25", self.p25), ("median", self.median), ("p75", self.p75),
            ("max", self.maximum)))
        return f"{self.prompts} prompts: {quantiles} at prompt {self.max_prompt}"


class DrafterCache(Record):
    """A drafter's cross-request cache (suffix decoding keeps earlier requests' outputs in a global tree): its
    policy, and why the measured drafts could replay outputs of the very prompts measured, which no user sees."""

    on: bool
    max_cached_requests: int  # 0: off
    primed: list[str] = []  # why the cache held the measured prompts' outputs before they were measured; []: never


class Window(Record):
    """From the first engine build to the last server stop: what the run held the accelerator slots for."""

    started_at: float  # Unix time (UTC), once the slots were held
    finished_at: float
    slots: list[str] = []  # e.g. gpu:<host>:<GPU UUID>; none when the profile holds no slot
    waited_s: float = 0.0  # queued behind other runs before started_at
