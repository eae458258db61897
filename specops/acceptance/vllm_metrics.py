"""Acceptance from vLLM's own Prometheus counters (its OpenAI server's /metrics, the V1 engine).

vllm/v1/spec_decode/metrics.py (0.9.0 on; at 0.32.0 :229-:255): counters `vllm:spec_decode_num_drafts`,
`..._num_draft_tokens`, `..._num_accepted_tokens` and `..._num_accepted_tokens_per_pos{position="N"}`,
labelled by model_name and engine. Cumulative since start: the pipeline reads them before and after the
benchmark window and subtracts (Acceptance.since). Several engines (data parallel) are summed.
"""
from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from specops.acceptance.model import Acceptance

PREFIX = "vllm:spec_decode_"
DRAFTS, DRAFT_TOKENS, ACCEPTED = "num_drafts", "num_draft_tokens", "num_accepted_tokens"
PER_POSITION = "num_accepted_tokens_per_pos"
SOURCE = "vLLM Prometheus counters (/metrics vllm:spec_decode_*)"


def from_vllm_metrics(text: str, source: str = SOURCE) -> Acceptance | None:
    """The counters in one /metrics page; None when the page has none (speculation off, or a vLLM without them)."""
    totals: dict[str, float] = {}
    per_position: dict[int, float] = {}
    for family in text_string_to_metric_families(text):
        if not family.name.startswith(PREFIX):
            continue
        name = family.name[len(PREFIX):]
        for sample in family.samples:
            if not sample.name.endswith("_total"):  # the parser's _created series carry start times
                continue
            if name == PER_POSITION:
                position = int(sample.labels["position"])
                per_position[position] = per_position.get(position, 0.0) + sample.value
            else:
                totals[name] = totals.get(name, 0.0) + sample.value
    if DRAFTS not in totals:
        return None
    positions = [per_position.get(i, 0.0) for i in range(max(per_position) + 1)] if per_position else None
    return Acceptance(source, totals[DRAFTS], totals.get(DRAFT_TOKENS, 0.0), totals.get(ACCEPTED, 0.0),
                      accepted_per_position=positions)
