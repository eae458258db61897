"""Per-request samples from genai-perf 0.0.16's raw export (perf_analyzer's profile_export.json).

Each measured request carries its payload, its send timestamp and one timestamp per response.
Output tokens are counted by genai-perf's own parser (LLMProfileDataParser, the code that makes
its aggregate figures), so a request's count here is the one its averages were built from.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from specops.bench.exports import ExportError
from specops.bench.metrics import RequestSample

RAW_EXPORT = "profile_export.json"


def request_prompt(inputs: dict[str, Any]) -> str | None:
    """The prompt text of one exported request: kserve's text_input, or an OpenAI payload's prompt."""
    if "text_input" in inputs:
        value = inputs["text_input"]
        return value[0] if isinstance(value, list) else str(value)
    payload = inputs.get("payload")
    if payload is None:
        return None
    body = json.loads(payload) if isinstance(payload, str) else payload
    if "prompt" in body:
        prompt = body["prompt"]
        return " ".join(prompt) if isinstance(prompt, list) else str(prompt)
    if "messages" in body:
        return " ".join(m.get("content", "") for m in body["messages"])
    return None


def request_samples(export: Path, tokenizer: Path | str, prompt_of: Callable[[str], int | None],
                    round_: int) -> list[RequestSample]:
    """One sample per exported request with responses; every request must name a known prompt."""
    from genai_perf.profile_data_parser import LLMProfileDataParser  # noqa: PLC0415
    from genai_perf.tokenizer import Tokenizer  # noqa: PLC0415
    from genai_perf.utils import load_json  # noqa: PLC0415

    tok = Tokenizer()
    tok.set_tokenizer(str(tokenizer), False, "main")
    parser = LLMProfileDataParser(export, tok)
    data = load_json(export)
    samples = []
    for request in data["experiments"][0]["requests"]:
        timestamps, outputs = request["response_timestamps"], request["response_outputs"]
        parser._preprocess_response(timestamps, outputs)  # genai-perf merges SSE fragments first
        if not timestamps:
            continue  # genai-perf skips requests without a response the same way
        text = request_prompt(request["request_inputs"])
        prompt = prompt_of(text) if text is not None else None
        if prompt is None:
            raise ExportError(f"{export}: a request's prompt is not one the job sent: {str(text)[:80]!r}")
        _, tokens = parser._get_output_token_counts(outputs)
        start = int(request["timestamp"])
        samples.append(RequestSample(prompt=prompt, round=round_, latency_s=(int(timestamps[-1]) - start) / 1e9,
                                     output_tokens=int(tokens), ttft_s=(int(timestamps[0]) - start) / 1e9))
    return samples
