"""How AIPerf 0.13.0 drives each API, and the `aiperf profile` command line built from it.

Every flag below is in `aiperf profile --help` of 0.13.0. The API decides AIPerf's endpoint type, that type's
flags, the `--extra-inputs` every request carries and the field of each answer that names the model which gave
it; the rest of the command is shared.

- Triton's HTTP generate endpoint (`triton/generate`) through the `template` endpoint type: a
  Jinja body gives the prompt and the stream flag, `--extra-inputs` adds the model's other
  inputs (the vLLM I/O's `sampling_parameters` JSON pinning the output length), and
  `response_field` names the output field; the template variables are those of
  aiperf/endpoints/template_endpoint.py there. Every answer names its model in `model_name`.
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
  request vLLM generated (and billed) 64 for. Every answer (each streamed chunk, or the whole body)
  names a model in `model`; the body names one too (`-m`), the same for every --url of a run.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from specops.bench.target import Api
from specops.bench.tool import BenchJob
from specops.triton.client import generate_inputs

# The prompt and the stream flag; every other field comes from --extra-inputs.
TEMPLATE = '{"text_input": {{ text|tojson }}, "stream": {{ stream|tojson }}}'


class Endpoint(NamedTuple):
    """An API as AIPerf drives it."""

    type: str  # --endpoint-type
    flags: list[str]  # that type's own flags
    extra: dict[str, Any]  # the --extra-inputs every request carries
    url: str  # --url: the server, and for an API whose path names the model, that path too
    answer_names: str  # the field of each answer naming the model that gave it


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
    return Endpoint("template", ["--custom-endpoint", f"/{route}"], extra, f"{job.address}/v2/models/{target.model}",
                    "model_name")


def openai_endpoint(job: BenchJob) -> Endpoint:
    """An OpenAI server's completions or chat endpoint; max_tokens comes from --osl. Output tokens
    are the server's own count (usage.completion_tokens), not the streamed text re-tokenized."""
    extra = {**_length_pin(job), "temperature": 0.0, **job.target.inputs}
    flags = ["--use-server-token-count"]
    if job.api is Api.OPENAI_CHAT:  # max_tokens as genai-perf sends it, not max_completion_tokens
        return Endpoint("chat", ["--use-legacy-max-tokens", *flags], extra, job.address, "model")
    return Endpoint("completions", flags, extra, job.address, "model")


ENDPOINTS: dict[Api, Callable[[BenchJob], Endpoint]] = {
    Api.TRITON_GENERATE: triton_generate_endpoint,
    Api.OPENAI_COMPLETIONS: openai_endpoint,
    Api.OPENAI_CHAT: openai_endpoint,
}
# APIs whose request body names the model (-m, one name for every --url of a run) rather than its URL: the
# variants of one run need a name every one of their servers answers to (BenchTarget.alias).
NAMED_IN_BODY = frozenset({Api.OPENAI_COMPLETIONS, Api.OPENAI_CHAT})


def request_model(jobs: Sequence[BenchJob]) -> str:
    """The -m of a run over `jobs`' servers: the variants' shared alias where the body names the model and
    there are several servers, else the (first) target's own name."""
    first = jobs[0]
    if len(jobs) > 1 and first.api in NAMED_IN_BODY:
        if first.target.alias is None:
            raise ValueError(f"{first.target.model!r} has no alias its servers share ({first.api.value})")
        return first.target.alias
    return first.target.model


def profile_command(executable: str, jobs: Sequence[BenchJob], artifact_dir: Path, input_file: Path,
                    export_level: str = "records") -> list[str]:
    """`aiperf profile` over the servers of `jobs` (one --url each, in order), with the load of the first.

    Several jobs: the input file holds each prompt once per server in a row and AIPerf's round robin over the
    URLs (timing/url_samplers.py, RoundRobinURLSampler, one step per credit) sends each copy to the next
    server; warm-up and measured counts are per server, so each server gets its own."""
    load, servers = jobs[0], len(jobs)
    endpoint = ENDPOINTS[load.api](load)
    urls = [ENDPOINTS[job.api](job).url for job in jobs]
    cmd = [executable, "profile", "-m", request_model(jobs), "--endpoint-type", endpoint.type, *endpoint.flags,
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
