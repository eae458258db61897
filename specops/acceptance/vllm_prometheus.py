"""vLLM's speculative-decoding Prometheus counters on its `/metrics` (V1 engine):
`vllm:spec_decode_num_drafts_total`, `vllm:spec_decode_num_draft_tokens_total`,
`vllm:spec_decode_num_accepted_tokens_total` (labels such as model_name, engine), summed over
label sets, optionally restricted to one model_name.
"""
from __future__ import annotations

import re

from specops.report.results import Acceptance

SOURCE = "vLLM /metrics (vllm:spec_decode_* counters)"
COUNTERS = {
    "vllm:spec_decode_num_drafts_total": "num_drafts",
    "vllm:spec_decode_num_draft_tokens_total": "num_draft_tokens",
    "vllm:spec_decode_num_accepted_tokens_total": "num_accepted_tokens",
}
_SAMPLE = re.compile(r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>[^}]*)\})?\s+(?P<value>\S+)")
_LABEL = re.compile(r'(?P<key>[a-zA-Z_][a-zA-Z0-9_]*)="(?P<value>(?:[^"\\]|\\.)*)"')


def from_vllm_metrics(text: str, model: str | None = None) -> Acceptance:
    totals = dict.fromkeys(COUNTERS.values(), 0.0)
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if not match or match["name"] not in COUNTERS:
            continue
        labels = dict(m.group("key", "value") for m in _LABEL.finditer(match["labels"] or ""))
        if model is not None and labels.get("model_name") != model:
            continue
        totals[COUNTERS[match["name"]]] += float(match["value"])
    return Acceptance(SOURCE, **totals)
