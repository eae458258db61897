"""genai-perf 0.0.16 as a benchmark tool: the served API -> its endpoint type, backend and inputs."""
from __future__ import annotations

from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

from specops.bench import genai_perf
from specops.bench.genai_perf import find_export
from specops.bench.prompts import write_prompts_jsonl
from specops.bench.target import Api
from specops.bench.tool import BenchJob, BenchTool, BenchToolError, ExportError, payload_prompt, prompt_index
from specops.host.liveness import Watchdog
from specops.results.metrics import BenchMetrics, BenchRun, RequestSample

# Per-request samples from genai-perf's raw export (profile_export.json): payload, send and response timestamps;
# output tokens counted by genai-perf's own parser (LLMProfileDataParser), as its averages were.
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


# API -> (genai-perf --endpoint-type, --backend for kserve)
ENDPOINTS: dict[Api, tuple[str, str | None]] = {
    Api.KSERVE_VLLM: ("kserve", "vllm"),
    Api.KSERVE_TRTLLM: ("kserve", "tensorrtllm"),
    # The LLM-API model reads sampling_param_* inputs; genai-perf's tensorrtllm payload carries
    # text_input plus inputs it ignores (declared optional by the backend's config addendum).
    Api.KSERVE_LLMAPI: ("kserve", "tensorrtllm"),
    Api.OPENAI_COMPLETIONS: ("completions", None),
    Api.OPENAI_CHAT: ("chat", None),
}


def length_inputs(api: Api, output_tokens: int) -> dict[str, Any]:
    """Inputs that carry the output length where genai-perf's own flags do not reach the model."""
    return {"sampling_param_max_tokens": output_tokens} if api is Api.KSERVE_LLMAPI else {}


class GenaiPerf(BenchTool):
    name = "genai-perf"
    apis = tuple(ENDPOINTS)
    # genai-perf 0.0.16: subcommand/subcommand.py logs the perf_analyzer command as the measured requests
    # start; profile_data_parser/profile_data_parser.py logs "Loading response data" once they are done.
    progress_marks = (("Running Perf Analyzer", 0.05), ("Loading response data", 0.9))

    def preflight(self) -> list[str]:
        return genai_perf.preflight()

    def version(self) -> str | None:
        try:
            return metadata.version("genai-perf")
        except metadata.PackageNotFoundError:
            return None

    def request(self, job: BenchJob) -> genai_perf.GenaiPerfRequest:
        endpoint_type, backend = ENDPOINTS[job.api]
        return genai_perf.GenaiPerfRequest(
            model=job.target.model,
            url=job.address,
            input_file=job.artifact_dir.parent / f"{job.artifact_dir.name}-input.jsonl",
            tokenizer=job.tokenizer,
            artifact_dir=job.artifact_dir,
            endpoint_type=endpoint_type,
            backend=backend,
            streaming=job.target.streaming,
            extra_inputs=dict(job.target.inputs) | length_inputs(job.api, job.output_tokens),
            concurrency=job.concurrency,
            request_count=job.requests,
            warmup_request_count=job.warmup,
            output_tokens=job.output_tokens,
        )

    def command(self, job: BenchJob) -> list[str]:
        return genai_perf.build_command(self.request(job))

    def run(self, job: BenchJob, on_line: Callable[[str], None] | None = None,
            watch: Watchdog | None = None) -> BenchRun:
        req = self.request(job)
        write_prompts_jsonl(job.prompts, req.input_file)
        try:
            artifact_dir = genai_perf.run(req, job.log_path, job.timeout_s, on_line=on_line, watch=watch)
        except genai_perf.GenaiPerfError as err:
            raise BenchToolError(str(err)) from err
        metrics = BenchMetrics(**genai_perf.parse_exports(artifact_dir))
        raw = find_export(artifact_dir).parent / RAW_EXPORT
        samples = request_samples(raw, job.tokenizer, prompt_index(job.prompts), job.round)
        return BenchRun(metrics=metrics, samples=samples)
