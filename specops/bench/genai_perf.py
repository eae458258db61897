"""genai-perf 0.0.16 adapter: one request -> one command line -> one bounded run -> exports.

The CLI is the current one (`--endpoint-type kserve --backend vllm|tensorrtllm`,
`completions`/`chat` for OpenAI servers; no `--service-kind`). Output length is pinned so
runs are comparable: `--output-tokens-mean N --output-tokens-stddev 0
--output-tokens-mean-deterministic`, plus what each request format needs to ignore EOS
(see `request_inputs`).
"""
from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specops.bench.tool import ExportError, aggregate_metrics
from specops.bench.tool_process import ToolExitError, ToolTimeoutError, run_logged
from specops.bench.toolchain import genai_perf_executable, preflight, tool_env
from specops.host.liveness import Watchdog

# genai-perf writes under `--artifact-dir` into a subdirectory it names itself (`<model>-<service kind>-<backend>-
# concurrency<N>`): this export (metrics + the input config), a `.csv` twin whose numbers carry thousands separators
# (so the JSON is read), perf_analyzer's raw `profile_export.json` and the `inputs.json` it sent.
EXPORT_NAME = "profile_export_genai_perf.json"


def find_export(artifact_dir: Path) -> Path:
    """The single profile_export_genai_perf.json in artifact_dir or one level below."""
    root = Path(artifact_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"artifact dir does not exist: {root}")
    found = sorted({*root.glob(EXPORT_NAME), *root.glob(f"*/{EXPORT_NAME}")})
    if not found:
        listing = sorted(str(p.relative_to(root)) for p in root.rglob("*"))[:20]
        raise FileNotFoundError(
            f"no {EXPORT_NAME} under {root} (genai-perf failed or did not finish? "
            f"check its log); found: {listing or 'nothing'}"
        )
    if len(found) > 1:
        raise ExportError(f"several exports under {root}, use one artifact dir per run: {found}")
    return found[0]


def parse_exports(artifact_dir: Path) -> dict[str, Any]:
    """Flat metrics from a run's export (ms for latencies, per second for throughputs).

    Keys: output_token_throughput_tok_s, request_throughput_req_s,
    {request_latency,time_to_first_token,inter_token_latency}_ms_{avg,p50,p99},
    output_sequence_length_avg, input_sequence_length_avg, request_count. Streaming-only
    metrics are None for a non-streaming run.
    """
    path = find_export(artifact_dir)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ExportError(f"{path}: not valid JSON ({exc})") from None
    return aggregate_metrics(data, path, "count")

__all__ = [
    "GenaiPerfError",
    "GenaiPerfRequest",
    "GenaiPerfTimeout",
    "build_command",
    "find_export",
    "parse_exports",
    "preflight",
    "request_inputs",
    "run",
    "tool_env",
]

ENDPOINT_TYPES = ("kserve", "completions", "chat")  # the request formats request_inputs knows
KSERVE_BACKENDS = ("vllm", "tensorrtllm")


class GenaiPerfError(ToolExitError):
    """genai-perf exited non-zero."""


class GenaiPerfTimeout(GenaiPerfError, ToolTimeoutError):
    """genai-perf outlived its time budget and was killed."""


@dataclass(frozen=True)
class GenaiPerfRequest:
    """One genai-perf profile run against one served model."""

    model: str
    url: str  # host:port; the gRPC port for kserve
    input_file: Path  # JSONL of {"text": ...}, see prompts.write_prompts_jsonl
    tokenizer: Path | str  # local HF tokenizer dir (runs offline)
    artifact_dir: Path
    endpoint_type: str = "kserve"  # kserve | completions | chat
    backend: str | None = "vllm"  # vllm | tensorrtllm; kserve only
    streaming: bool = True
    concurrency: int = 1
    request_count: int | None = None  # None: genai-perf's default (max(10, 2 x concurrency))
    warmup_request_count: int = 0
    output_tokens: int | None = 128  # fixed output length (stddev 0); None: model decides
    ignore_eos: bool = True  # with output_tokens: generate exactly that many tokens
    temperature: float | None = 0.0  # greedy, as the lossless check
    extra_inputs: dict[str, Any] = field(default_factory=dict)  # verbatim, win over the above
    random_seed: int = 0

    def __post_init__(self) -> None:
        if self.endpoint_type not in ENDPOINT_TYPES:
            raise ValueError(f"endpoint_type {self.endpoint_type!r}: expected one of {ENDPOINT_TYPES}")
        if self.endpoint_type == "kserve" and self.backend not in KSERVE_BACKENDS:
            raise ValueError(f"backend {self.backend!r}: kserve needs one of {KSERVE_BACKENDS}")
        if self.concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {self.concurrency}")
        for name in ("request_count", "output_tokens"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name} must be >= 1 or None, got {value}")
        if self.warmup_request_count < 0:
            raise ValueError(f"warmup_request_count must be >= 0, got {self.warmup_request_count}")


def request_inputs(req: GenaiPerfRequest) -> dict[str, Any]:
    """The `--extra-inputs` genai-perf adds to every request for this request format.

    genai-perf 0.0.16's converters put extra inputs at the top level of each payload: for
    kserve+vllm that is a tensor per key, so sampling settings must travel inside the
    `sampling_parameters` JSON string (replacing genai-perf's own, which carries max_tokens
    and min_tokens as strings only). For kserve+tensorrtllm, `max_tokens` and `min_length`
    come from the deterministic output-token flags and nothing is added. OpenAI payloads
    take the keys directly.
    """
    sampling: dict[str, Any] = {}
    if req.output_tokens is not None:
        sampling["max_tokens"] = req.output_tokens
        if req.ignore_eos:
            sampling["min_tokens"] = req.output_tokens
            sampling["ignore_eos"] = True
    if req.temperature is not None:
        sampling["temperature"] = req.temperature
    inputs: dict[str, Any] = {}
    if req.endpoint_type == "kserve" and req.backend == "vllm" and sampling:
        inputs["sampling_parameters"] = json.dumps(sampling, sort_keys=True)
    elif req.endpoint_type in ("completions", "chat"):
        inputs.update({k: v for k, v in sampling.items() if k != "max_tokens"})
    inputs.update(req.extra_inputs)
    return inputs


def build_command(req: GenaiPerfRequest) -> list[str]:
    """The genai-perf command line for this request (every flag exists in 0.0.16)."""
    cmd = [genai_perf_executable(), "profile", "-m", req.model, "--endpoint-type", req.endpoint_type]
    if req.endpoint_type == "kserve" and req.backend:
        cmd += ["--backend", req.backend]
    if req.streaming:
        cmd.append("--streaming")
    cmd += [
        "--url", req.url,
        "--tokenizer", str(req.tokenizer),
        "--concurrency", str(req.concurrency),
        "--input-file", str(req.input_file),
        "--artifact-dir", str(req.artifact_dir),
        "--random-seed", str(req.random_seed),
    ]  # fmt: skip
    if req.request_count is not None:
        cmd += ["--request-count", str(req.request_count)]
    if req.warmup_request_count:
        cmd += ["--warmup-request-count", str(req.warmup_request_count)]
    if req.output_tokens is not None:
        cmd += ["--output-tokens-mean", str(req.output_tokens), "--output-tokens-stddev", "0"]
        # genai-perf 0.0.16 takes the deterministic flag only for Triton service kinds
        # (ConfigCommand._check_output_tokens_and_service_kind); OpenAI payloads pin the length
        # with ignore_eos / min_tokens instead (request_inputs).
        if req.ignore_eos and req.endpoint_type == "kserve":
            cmd.append("--output-tokens-mean-deterministic")
    inputs = request_inputs(req)
    if inputs:
        cmd += ["--extra-inputs", json.dumps(inputs, sort_keys=True)]
    return cmd


def run(
    req: GenaiPerfRequest,
    log_path: Path,
    timeout_s: float,
    on_line: Callable[[str], None] | None = None,
    base_env: Mapping[str, str] | None = None,
    watch: Watchdog | None = None,
) -> Path:
    """Run genai-perf in its own process group (see tool_process.run_logged); output goes to
    log_path (and on_line). Returns req.artifact_dir (the exports sit in a subdirectory: see
    find_export).
    """
    Path(req.artifact_dir).mkdir(parents=True, exist_ok=True)
    env = tool_env(base_env)
    env.setdefault("COLUMNS", "160")  # genai-perf's result table wraps badly at rich's default 80
    run_logged("genai-perf", build_command(req), env, log_path, timeout_s, on_line,
               errors=(GenaiPerfError, GenaiPerfTimeout), watch=watch)
    return Path(req.artifact_dir)
