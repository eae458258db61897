"""trtllm-serve iteration stats: `GET /metrics` returns a JSON list, one object per executor
iteration, with `specDecodingStats` when speculation ran and the server was started with
`enable_iter_perf_stats: true` in its extra LLM API options.

Fields (TensorRT-LLM cpp/include/tensorrt_llm/executor/types.h, struct SpecDecodingStats):
numDraftTokens (drafted in the iteration, all requests), numAcceptedTokens,
numRequestsWithDraftTokens (requests that carried drafts: one verification step each),
acceptanceLength (tokens per step for those requests), iterLatencyMS, draftOverhead.

/metrics drains the stats queue: each call returns the iterations since the previous call,
so a caller accumulates (see `accumulate`). Entries may arrive as JSON strings.
"""
from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from specops.acceptance.model import Acceptance

SOURCE = "trtllm-serve /metrics iteration stats (specDecodingStats)"


def _entries(stats: Any) -> Iterable[dict]:
    if isinstance(stats, (str, bytes)):
        stats = json.loads(stats)
    for entry in stats or []:
        if isinstance(entry, (str, bytes)):
            entry = json.loads(entry)
        if isinstance(entry, dict):
            yield entry


def from_iteration_stats(stats: Any) -> Acceptance:
    """Sum the speculation counters over iterations (a /metrics body, parsed or not)."""
    steps = drafted = accepted = 0.0
    for entry in _entries(stats):
        spec = entry.get("specDecodingStats")
        if not isinstance(spec, dict) or not spec.get("numDraftTokens"):
            continue
        drafted += float(spec["numDraftTokens"])
        accepted += float(spec.get("numAcceptedTokens", 0))
        steps += float(spec.get("numRequestsWithDraftTokens", 0))
    return Acceptance(SOURCE, steps, drafted, accepted)


def accumulate(total: Acceptance | None, stats: Any) -> Acceptance:
    """Add one drained /metrics batch to running totals."""
    more = from_iteration_stats(stats)
    if total is None:
        return more
    return Acceptance(SOURCE, total.num_drafts + more.num_drafts, total.num_draft_tokens + more.num_draft_tokens,
                      total.num_accepted_tokens + more.num_accepted_tokens)
