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
- Interleaved runs (InterleavedJob, ai-dynamo/aiperf PR #606): several `--url`s, one per variant's server,
  which the credit issuer takes in turn, one step per request (credit/issuer.py _issue_credit_internal,
  timing/url_samplers.py RoundRobinURLSampler; one sampler for warm-up and profiling, so even per-phase
  counts keep the turn). Each prompt is written once per server, in a row, so every server answers every
  prompt. 0.13.0 exports no url_index per request, so which server answered is read from the answer:
  `--export-level raw` keeps each response, and Triton's generate answers carry `model_name`.
"""
from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

from specops.bench.aiperf_exports import (
    answering_models,
    parse_metrics,
    profiling_records,
    record_sample,
    records_metrics,
    request_errors,
    request_samples,
)
from specops.bench.exports import ExportError
from specops.bench.prompts import write_prompts_jsonl
from specops.bench.target import Api
from specops.bench.tool import BenchJob, BenchTool, BenchToolError, InterleavedJob, prompt_index
from specops.bench.tool_process import ToolExitError, run_logged
from specops.bench.toolchain import OFFLINE_VARS
from specops.liveness import Watch
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


class Endpoint(NamedTuple):
    """An API as AIPerf drives it."""

    type: str  # --endpoint-type
    flags: list[str]  # that type's own flags
    extra: dict[str, Any]  # the --extra-inputs every request carries
    url: str  # --url: the server, and for an API whose path names the model, that path too


def _length_pin(job: BenchJob) -> dict[str, Any]:
    return {"min_tokens": job.output_tokens, "ignore_eos": True} if job.target.pins_output_length else {}


def triton_generate_endpoint(job: BenchJob) -> Endpoint:
    """Triton's generate(_stream) through the template endpoint, with the vLLM I/O body. The model's path
    is part of --url and the route is the custom endpoint that AIPerf appends to each URL
    (transports/aiohttp_transport.py, AioHttpTransport.get_url): so one run can name a model per server."""
    target = job.target
    route = "generate_stream" if target.streaming else "generate"
    # The vLLM I/O body specops' own requests send; the template supplies text_input and stream.
    body = generate_inputs("", job.output_tokens, 0.0, **_length_pin(job))
    extra = {"payload_template": TEMPLATE, "response_field": "text_output", **target.inputs,
             **{k: v for k, v in body.items() if k not in ("text_input", "stream")}}
    return Endpoint("template", ["--custom-endpoint", f"/{route}"], extra, f"{job.address}/v2/models/{target.model}")


def openai_endpoint(job: BenchJob) -> Endpoint:
    """An OpenAI server's completions or chat endpoint; max_tokens comes from --osl. Output tokens
    are the server's own count (usage.completion_tokens), not the streamed text re-tokenized."""
    extra = {**_length_pin(job), "temperature": 0.0, **job.target.inputs}
    flags = ["--use-server-token-count"]
    if job.api is Api.OPENAI_CHAT:  # max_tokens as genai-perf sends it, not max_completion_tokens
        return Endpoint("chat", ["--use-legacy-max-tokens", *flags], extra, job.address)
    return Endpoint("completions", flags, extra, job.address)


ENDPOINTS: dict[Api, Callable[[BenchJob], Endpoint]] = {
    Api.TRITON_GENERATE: triton_generate_endpoint,
    Api.OPENAI_COMPLETIONS: openai_endpoint,
    Api.OPENAI_CHAT: openai_endpoint,
}
# Why an API's servers cannot share one interleaved run. An OpenAI body names its model (-m), one name for
# every --url, and each variant's server answers only to its own served name.
NOT_INTERLEAVED: dict[Api, str] = {
    Api.OPENAI_COMPLETIONS: "an OpenAI request names its model, and each variant's server answers to its own name",
    Api.OPENAI_CHAT: "an OpenAI request names its model, and each variant's server answers to its own name",
}


class AIPerf(BenchTool):
    name = "aiperf"
    apis = tuple(ENDPOINTS)  # preferred first: Triton's own endpoint, then completions (no chat template)
    interleaves = frozenset(ENDPOINTS) - frozenset(NOT_INTERLEAVED)
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

    def input_file(self, job: BenchJob | InterleavedJob) -> Path:
        return job.artifact_dir.parent / f"{job.artifact_dir.name}-input.jsonl"

    def command(self, job: BenchJob) -> list[str]:
        return self._command(job, [ENDPOINTS[job.api](job).url], job.artifact_dir, self.input_file(job), 1)

    def _command(self, load: BenchJob, urls: list[str], artifact_dir: Path, input_file: Path, servers: int,
                 export_level: str = "records") -> list[str]:
        """`servers` > 1: the input file holds each prompt that many times in a row and AIPerf's round robin over
        `urls` (timing/url_samplers.py, RoundRobinURLSampler, one step per credit) sends each copy to the next
        server; warm-up and measured counts are per server, so each server gets its own."""
        endpoint = ENDPOINTS[load.api](load)
        cmd = [str(executable() or "aiperf"), "profile", "-m", load.target.model,
               "--endpoint-type", endpoint.type, *endpoint.flags,
               *(flag for url in urls for flag in ("--url", url)), "--tokenizer", str(load.tokenizer),
               "--input-file", str(input_file), "--custom-dataset-type", "single_turn",
               "--dataset-sampling-strategy", "sequential",
               "--extra-inputs", json.dumps(endpoint.extra, sort_keys=True),
               "--osl", str(load.output_tokens), "--osl-stddev", "0",
               "--request-count", str(load.requests * servers), "--concurrency", str(load.concurrency),
               "--random-seed", "0", "--artifact-dir", str(artifact_dir), "--export-level", export_level,
               "--ui-type", "none", "--no-gpu-telemetry", "--no-server-metrics"]  # fmt: skip
        if load.target.streaming:
            cmd.append("--streaming")
        if load.warmup:
            cmd += ["--warmup-request-count", str(load.warmup * servers)]
        return cmd

    def run(self, job: BenchJob, on_line: Callable[[str], None] | None = None,
            watch: Watch | None = None) -> BenchRun:
        self._preflighted()
        write_prompts_jsonl(job.prompts, self.input_file(job))
        with self._reporting_failures(job.artifact_dir, job.address, job.log_path):
            run_logged("aiperf", self.command(job), tool_env(), job.log_path, job.timeout_s, on_line, watch=watch)
            metrics = parse_metrics(job.artifact_dir)
            samples = request_samples(job.artifact_dir, prompt_index(job.prompts), job.round)
        if len(samples) != metrics.request_count:
            raise BenchToolError(f"AIPerf exported {len(samples)} measured requests but counted "
                                 f"{metrics.request_count} (artifacts: {job.artifact_dir})")
        return BenchRun(metrics=metrics, samples=samples)

    def interleave_blocker(self, jobs: Sequence[BenchJob]) -> str | None:
        apis = {job.api for job in jobs}
        if len(apis) > 1:
            return f"the variants are reached over different APIs ({', '.join(sorted(a.value for a in apis))})"
        api = jobs[0].api
        if api in NOT_INTERLEAVED:
            return f"{api.value}: {NOT_INTERLEAVED[api]}"
        shared = [(e.type, e.flags, e.extra) for e in (ENDPOINTS[job.api](job) for job in jobs)]
        if any(other != shared[0] for other in shared[1:]):
            return "the variants' requests differ beyond their address (model inputs or flags)"
        if len({job.target.streaming for job in jobs}) > 1:
            return "one variant streams and another does not"
        if len({job.target.model for job in jobs}) < len(jobs):
            return "two variants serve a model of the same name, so their answers cannot be told apart"
        return None

    def interleaved_command(self, job: InterleavedJob) -> list[str]:
        urls = [ENDPOINTS[j.api](j).url for j in job.jobs]
        return self._command(job.load, urls, job.artifact_dir, self.input_file(job), len(job.jobs), "raw")

    def run_interleaved(self, job: InterleavedJob, on_line: Callable[[str], None] | None = None,
                        watch: Watch | None = None) -> list[BenchRun]:
        """The variants' requests alternate one by one. Which server answered each request is read from its
        answer (the raw export's first response names its model: Triton's generate puts `model_name` in every
        answer), not inferred from the order; every variant must have answered each measured prompt once."""
        self._preflighted()
        blocker = self.interleave_blocker(job.jobs)
        if blocker is not None:
            raise BenchToolError(f"AIPerf cannot interleave these variants: {blocker}")
        load, servers = job.load, len(job.jobs)
        write_prompts_jsonl([p for p in load.prompts for _ in range(servers)], self.input_file(job))
        addresses = ", ".join(j.address for j in job.jobs)
        with self._reporting_failures(job.artifact_dir, addresses, job.log_path):
            run_logged("aiperf", self.interleaved_command(job), tool_env(), job.log_path, job.timeout_s, on_line,
                       watch=watch)
            parse_metrics(job.artifact_dir)  # completeness and errors of the run as a whole
            answered = answering_models(job.artifact_dir)
            records = profiling_records(job.artifact_dir)
        prompt_of = prompt_index(load.prompts)
        by_model: dict[str, list[dict[str, Any]]] = {j.target.model: [] for j in job.jobs}
        for record in records:
            model = answered.get(record["metadata"].get("x_request_id"))
            if model not in by_model:
                raise BenchToolError(f"request {record['metadata'].get('x_request_id')} was answered by model "
                                     f"{model!r}, none of {sorted(by_model)} (artifacts: {job.artifact_dir})")
            by_model[model].append(record)
        runs = []
        for j in job.jobs:
            samples = [record_sample(r, prompt_of, load.round, job.artifact_dir) for r in by_model[j.target.model]]
            prompts = sorted(s.prompt for s in samples)
            if len(samples) != load.requests or len(set(prompts)) != len(prompts):
                raise BenchToolError(f"{j.target.model} answered {len(samples)} measured requests over "
                                     f"{len(set(prompts))} prompts; the interleaved run asked {load.requests}, each "
                                     f"prompt once (artifacts: {job.artifact_dir})")
            runs.append(BenchRun(metrics=records_metrics(by_model[j.target.model]), samples=samples))
        return runs

    def _preflighted(self) -> None:
        problems = self.preflight()
        if problems:
            raise BenchToolError("; ".join(problems))

    @contextmanager
    def _reporting_failures(self, artifact_dir: Path, address: str, log_path: Path) -> Iterator[None]:
        """A failed run's error says what the servers answered, which says more than AIPerf's exit."""
        artifact_dir.mkdir(parents=True, exist_ok=True)
        try:
            yield
        except (ToolExitError, ExportError) as err:
            failed = request_errors(artifact_dir)
            cause = f"requests failed at {address}: {'; '.join(failed)[:1000]}\n" if failed else ""
            raise BenchToolError(f"{cause}{err} (log: {log_path})") from err
