"""TRT-LLM Triton backend: the per-request outputs a request gets with `return_perf_metrics`.

The tensorrt_llm / ensemble models declare `acceptance_rate` (TYPE_FP32, dims [1]),
`total_accepted_draft_tokens` and `total_draft_tokens` (TYPE_INT32, dims [1])
(tensorrtllm_backend all_models/inflight_batcher_llm/*/config.pbtxt). The HTTP generate
endpoint returns them as JSON fields beside `text_output`; gRPC clients read them with
`as_numpy(name)` (shape [1, 1] with the batch dimension). The LLM-API model.py builds them with the
text_output dtype, so there they arrive as strings (upstream docs: "total_draft_tokens": "0"). All parse here.

The outputs carry no count of verification steps. With a fixed draft length K per step
(draft-target, or a chain), steps = total_draft_tokens / K; pass `draft_tokens_per_step` to
get `num_drafts` and hence mean accepted tokens per step. Without it num_drafts stays 0 and
only the acceptance rate is defined.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from specops.acceptance.model import Acceptance

SOURCE = "TRT-LLM Triton backend return_perf_metrics (total_draft_tokens, total_accepted_draft_tokens)"
FIELDS = ("total_accepted_draft_tokens", "total_draft_tokens")


def _scalar(value: Any) -> float:
    """A JSON number or string, a one-element (nested) list, or a numpy array (numbers or bytes) -> float."""
    while hasattr(value, "tolist") and not isinstance(value, (int, float)):
        value = value.tolist()
    while isinstance(value, (list, tuple)):
        if len(value) != 1:
            raise ValueError(f"expected one value per request, got {value!r}")
        value = value[0]
    return float(value)


def parse_perf_metrics(outputs: Mapping[str, Any]) -> tuple[float, float] | None:
    """(total_accepted_draft_tokens, total_draft_tokens) of one response, None without them."""
    if any(f not in outputs for f in FIELDS):
        return None
    return _scalar(outputs["total_accepted_draft_tokens"]), _scalar(outputs["total_draft_tokens"])


def from_perf_metrics(responses: Iterable[Mapping[str, Any]], draft_tokens_per_step: int | None = None) -> Acceptance:
    """Totals over final responses, each of which must carry the outputs."""
    accepted = drafted = 0.0
    for response in responses:
        perf = parse_perf_metrics(response)
        if perf is None:
            missing = [f for f in FIELDS if f not in response]
            raise ValueError(f"response lacks {', '.join(missing)}: was the request sent with return_perf_metrics?")
        accepted, drafted = accepted + perf[0], drafted + perf[1]
    steps = drafted / draft_tokens_per_step if draft_tokens_per_step else 0.0
    return Acceptance(SOURCE, steps, drafted, accepted)
