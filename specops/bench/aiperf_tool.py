"""AIPerf 0.13.0 as a benchmark tool, run from its own environment.

AIPerf's pins clash with this environment (transformers, among others), so it lives in a venv
of its own (`make install` creates `.venv-aiperf`) and is called through its CLI. Every flag
below is in `aiperf profile --help` of 0.13.0. The API decides AIPerf's endpoint type, that
type's flags and the `--extra-inputs` every request carries; the rest of the command is shared.

- Triton's HTTP generate endpoint (`triton/generate`) through the `template` endpoint type: a
  Jinja body gives the prompt and the stream flag, `--extra-inputs` adds the model's other
  inputs (the vLLM I/O's `sampling_parameters` JSON pinning the output length), and
  `response_field` names the output field; the template variables are those of
  aiperf/endpoints/template_endpoint.py there.
- OpenAI servers (`vllm serve`, trtllm-serve) through the `completions` and `chat` endpoint
  types, which append /v1/completions and /v1/chat/completions to `--url` (plugin/plugins.yaml,
  `endpoint_path`). Their bodies are built by aiperf/endpoints/openai_completions.py
  (CompletionsEndpoint.format_payload: prompt, model, stream, `max_tokens` from `--osl`) and
  openai_chat.py (ChatEndpoint.format_payload: one user message, and `max_completion_tokens`
  unless `--use-legacy-max-tokens`); both then merge `--extra-inputs` at the top level
  (config/flags/_converter_endpoint.py, build_endpoint: endpoint["extra"]) and, when streaming,
  add `stream_options.include_usage`. The length is pinned as genai-perf's adapter pins it
  (genai_perf.request_inputs): max_tokens = min_tokens = N, ignore_eos, temperature 0, the
  target's own inputs last. `--osl N --osl-stddev 0` becomes each turn's max_tokens for a file
  dataset too (dataset/composer/base.py, BaseDatasetComposer._set_max_tokens).
  `--use-server-token-count` counts output tokens from the server's `usage`
  (records/inference_result_parser.py, _compute_server_token_counts) instead of re-tokenizing
  the joined streamed text (_compute_client_side_token_counts), which merged tokens: 62 for a
  request vLLM generated (and billed) 64 for.
- Per-request speculative-decoding metrics: vLLM (>= 0.32.0, `--per-request-spec-decode-metrics`) puts
  `metrics.speculative_decoding` in a stream's final usage chunk (a non-streaming body's root otherwise).
  AIPerf 0.13.0 reads it itself (endpoints/base_endpoint.py extract_spec_decode_stats, called by
  openai_completions.py and openai_chat.py; spec_decode/vllm_adapter.py VLLMSpecDecodeAdapter) and writes
  it into each request's line of profile_export.jsonl as `spec_decode_acceptance` (common/models/
  record_models.py MetricRecordInfo; post_processors/record_export_jsonl_writer.py), beside the same
  request's latency: `--export-level records` suffices. `raw` (profile_export_raw.jsonl, every chunk of
  every response) would only cost disk, for these APIs as for Triton's generate endpoint.
"""
from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from specops.bench.aiperf_exports import parse_metrics, request_errors, request_samples
from specops.bench.exports import ExportError
from specops.bench.prompts import write_prompts_jsonl
from specops.bench.target import Api
from specops.bench.tool import BenchJob, BenchTool, BenchToolError, prompt_index
from specops.bench.tool_process import ToolExitError, run_logged
from specops.bench.toolchain import OFFLINE_VARS
from specops.liveness import Watchdog
from specops.results.metrics import BenchRun
from specops.secrets import scrubbed_env
from specops.settings import env_name, settings
from specops.triton.client import generate_inputs

VERSION = "0.13.0"  # the release whose CLI and exports this adapter was written against
EXECUTABLE_VAR = env_name("specops_aiperf")
CHECKOUT_VENV = Path(__file__).resolve().parents[2] / ".venv-aiperf"  # where `make install` puts it
INSTALL_HINT = (f"`make install` creates .venv-aiperf with aiperf=={VERSION} (its pins clash with specops' "
                f"environment), or point {EXECUTABLE_VAR} at an aiperf {VERSION} executable")
# The prompt and the stream flag; every other field comes from --extra-inputs.
TEMPLATE = '{"text_input": {{ text|tojson }}, "stream": {{ stream|tojson }}}'
# An interpreter's own settings would leak into AIPerf's venv.
_FOREIGN_VARS = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")


def executable() -> Path | None:
    """$SPECOPS_AIPERF, else the checkout's .venv-aiperf, else `aiperf` on PATH."""
    if (configured := settings().specops_aiperf) is not None:
        return configured
    candidate = CHECKOUT_VENV / "bin" / "aiperf"
    if candidate.is_file():
        return candidate
    found = shutil.which("aiperf")
    return Path(found) if found else None


@functools.lru_cache(maxsize=8)
def _version_of(path: Path) -> str | None:
    try:
        done = subprocess.run([str(path), "--version"], capture_output=True, text=True, timeout=60,
                              env=tool_env())
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = done.stdout.strip().splitlines()
    return lines[-1].strip() if done.returncode == 0 and lines else None


def tool_env() -> dict[str, str]:
    """AIPerf's environment: no secrets, and not HF's offline mode.

    The tokenizer is a local directory, which loads without the network; but with
    HF_HUB_OFFLINE set, AIPerf 0.13.0 takes the name for a hub repo id
    (aiperf/common/tokenizer.py, Tokenizer._load_from_hub's offline branch) and fails with
    HFValidationError.
    """
    return {k: v for k, v in scrubbed_env(os.environ).items() if k not in _FOREIGN_VARS and k not in OFFLINE_VARS}


# An API's AIPerf endpoint: (--endpoint-type, that type's own flags, the --extra-inputs of every request).
Endpoint = tuple[str, list[str], dict[str, Any]]


def _length_pin(job: BenchJob) -> dict[str, Any]:
    return {"min_tokens": job.output_tokens, "ignore_eos": True} if job.target.pins_output_length else {}


def triton_generate_endpoint(job: BenchJob) -> Endpoint:
    """Triton's generate(_stream) through the template endpoint, with the vLLM I/O body."""
    target = job.target
    route = "generate_stream" if target.streaming else "generate"
    # The vLLM I/O body specops' own requests send; the template supplies text_input and stream.
    body = generate_inputs("", job.output_tokens, 0.0, **_length_pin(job))
    extra = {"payload_template": TEMPLATE, "response_field": "text_output", **target.inputs,
             **{k: v for k, v in body.items() if k not in ("text_input", "stream")}}
    return "template", ["--custom-endpoint", f"/v2/models/{target.model}/{route}"], extra


def openai_endpoint(job: BenchJob) -> Endpoint:
    """An OpenAI server's completions or chat endpoint; max_tokens comes from --osl. Output tokens
    are the server's own count (usage.completion_tokens), not the streamed text re-tokenized."""
    extra = {**_length_pin(job), "temperature": 0.0, **job.target.inputs}
    flags = ["--use-server-token-count"]
    if job.api is Api.OPENAI_CHAT:  # max_tokens as genai-perf sends it, not max_completion_tokens
        return "chat", ["--use-legacy-max-tokens", *flags], extra
    return "completions", flags, extra


ENDPOINTS: dict[Api, Callable[[BenchJob], Endpoint]] = {
    Api.TRITON_GENERATE: triton_generate_endpoint,
    Api.OPENAI_COMPLETIONS: openai_endpoint,
    Api.OPENAI_CHAT: openai_endpoint,
}


class AIPerf(BenchTool):
    name = "aiperf"
    apis = tuple(ENDPOINTS)  # preferred first: Triton's own endpoint, then completions (no chat template)
    # AIPerf 0.13.0's records/records_manager.py (RecordsManager._on_credit_phase_start,
    # _on_credit_phase_sending_complete, _on_credit_phase_complete).
    progress_marks = (("Credit phase start: profiling", 0.05), ("requests. Waiting for all to complete", 0.8),
                      ("All requests have completed", 0.9))

    def preflight(self) -> list[str]:
        path = executable()
        if path is None or not path.is_file():
            return [f"AIPerf not found{f' at {path}' if path else ''}: {INSTALL_HINT}"]
        found = _version_of(path)
        if found != VERSION:
            return [f"{path} is AIPerf {found or '(version unknown: `aiperf --version` failed)'}; specops reads "
                    f"the CLI and exports of {VERSION}: {INSTALL_HINT}"]
        return []

    def version(self) -> str | None:
        path = executable()
        return _version_of(path) if path and path.is_file() else None

    def input_file(self, job: BenchJob) -> Path:
        return job.artifact_dir.parent / f"{job.artifact_dir.name}-input.jsonl"

    def command(self, job: BenchJob) -> list[str]:
        endpoint_type, flags, extra = ENDPOINTS[job.api](job)
        cmd = [str(executable() or "aiperf"), "profile", "-m", job.target.model,
               "--endpoint-type", endpoint_type, *flags,
               "--url", job.address, "--tokenizer", str(job.tokenizer),
               "--input-file", str(self.input_file(job)), "--custom-dataset-type", "single_turn",
               "--dataset-sampling-strategy", "sequential",
               "--extra-inputs", json.dumps(extra, sort_keys=True),
               "--osl", str(job.output_tokens), "--osl-stddev", "0",
               "--request-count", str(job.requests), "--concurrency", str(job.concurrency),
               "--random-seed", "0", "--artifact-dir", str(job.artifact_dir), "--export-level", "records",
               "--ui-type", "none", "--no-gpu-telemetry", "--no-server-metrics"]  # fmt: skip
        if job.target.streaming:
            cmd.append("--streaming")
        if job.warmup:
            cmd += ["--warmup-request-count", str(job.warmup)]
        return cmd

    def run(self, job: BenchJob, on_line: Callable[[str], None] | None = None,
            watch: Watchdog | None = None) -> BenchRun:
        problems = self.preflight()
        if problems:
            raise BenchToolError("; ".join(problems))
        write_prompts_jsonl(job.prompts, self.input_file(job))
        job.artifact_dir.mkdir(parents=True, exist_ok=True)
        try:
            run_logged("aiperf", self.command(job), tool_env(), job.log_path, job.timeout_s, on_line, watch=watch)
            metrics = parse_metrics(job.artifact_dir)
            samples = request_samples(job.artifact_dir, prompt_index(job.prompts), job.round)
        except (ToolExitError, ExportError) as err:
            failed = request_errors(job.artifact_dir)  # the server's answer says more than AIPerf's exit
            cause = f"requests failed at {job.address}: {'; '.join(failed)[:1000]}\n" if failed else ""
            raise BenchToolError(f"{cause}{err} (log: {job.log_path})") from err
        if len(samples) != metrics.request_count:
            raise BenchToolError(f"AIPerf exported {len(samples)} measured requests but counted "
                                 f"{metrics.request_count} (artifacts: {job.artifact_dir})")
        return BenchRun(metrics=metrics, samples=samples)
