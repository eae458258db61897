"""Per-request samples from genai-perf 0.0.16's raw export (perf_analyzer's profile_export.json).

Each measured request carries its payload, its send timestamp and one timestamp per response.
Output tokens are counted by genai-perf's own parser (LLMProfileDataParser, the code that makes
its aggregate figures), so a request's count here is the one its averages were built from.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from specops.bench.exports import ExportError
from specops.bench.tool import payload_prompt
from specops.results.metrics import RequestSample

RAW_EXPORT = "profile_export.json"


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
        text = payload_prompt(request["request_inputs"])
        prompt = prompt_of(text) if text is not None else None
        if prompt is None:
            raise ExportError(f"{export}: a request's prompt is not one the job sent: {str(text)[:80]!r}")
        _, tokens = parser._get_output_token_counts(outputs)
        start = int(request["timestamp"])
        samples.append(RequestSample(prompt=prompt, round=round_, latency_s=(int(timestamps[-1]) - start) / 1e9,
                                     output_tokens=int(tokens), ttft_s=(int(timestamps[0]) - start) / 1e9))
    return samples
