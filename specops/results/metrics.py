"""What every benchmark tool reports, typed: one run's aggregate figures and its requests."""
from __future__ import annotations

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
