"""vLLM's own speculative-decoding log lines, read from the server's log.

Formats (specops/versions/data/vllm.yaml `spec_decode_log`, from the vLLM sources at each release):
- V0 engine (vLLM <= 0.9.x): "Speculative metrics: Draft acceptance rate: ..., System efficiency: ...,
  Number of speculative tokens: K, Number of accepted tokens: A, Number of draft tokens: D, Number of
  emitted tokens: E." - counts cumulative since the engine started (vllm/engine/metrics.py), printed
  at most every 5 s while the engine steps.
- V1 engine (0.8.4+): "SpecDecoding metrics: ... Accepted: A tokens, Drafted: D tokens ..." with
  "Mean acceptance length: L" from 0.9.0 - counts per logging interval (vllm/v1/spec_decode/metrics.py).

Both are turned into cumulative counters, so `Acceptance.since` gives the benchmark window.
"""
from __future__ import annotations

import re

from specops.acceptance.model import Acceptance

SOURCE_V0 = "vLLM V0 'Speculative metrics' log lines (cumulative since start)"
SOURCE_V1 = "vLLM V1 'SpecDecoding metrics' log lines (summed over logging intervals)"
_V0 = re.compile(r"Speculative metrics: .*?Number of speculative tokens: (?P<k>\d+), Number of accepted tokens: "
                 r"(?P<a>\d+), Number of draft tokens: (?P<d>\d+), Number of emitted tokens: (?P<e>\d+)")
_V1 = re.compile(r"SpecDecoding metrics: (?P<body>.*?Accepted: (?P<a>\d+) tokens, Drafted: (?P<d>\d+) tokens.*)$")
_MEAN_LENGTH = re.compile(r"Mean acceptance length: (?P<l>[0-9.]+)")


def from_vllm_log(text: str) -> Acceptance | None:
    """Cumulative counters from every spec-decode line in `text`; None when there is none."""
    v0 = list(_V0.finditer(text))
    if v0:
        last = v0[-1]
        k, drafted = int(last["k"]), float(last["d"])
        return Acceptance(SOURCE_V0, drafted / k if k else 0.0, drafted, float(last["a"]),
                          num_emitted_tokens=float(last["e"]))
    drafts = drafted = accepted = 0.0
    steps_known = True
    found = False
    for line in text.splitlines():
        match = _V1.search(line)
        if not match:
            continue
        found = True
        a, d = float(match["a"]), float(match["d"])
        accepted, drafted = accepted + a, drafted + d
        length = _MEAN_LENGTH.search(match["body"])
        # Mean acceptance length L = 1 + accepted / drafts over the interval; without accepted
        # tokens (L = 1) the interval's draft count cannot be recovered.
        if length and float(length["l"]) > 1.0:
            drafts += a / (float(length["l"]) - 1.0)
        elif d:
            steps_known = False
    if not found:
        return None
    return Acceptance(SOURCE_V1, round(drafts) if steps_known else 0.0, drafted, accepted)
