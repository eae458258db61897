"""Synthesize training data with the served target, and train the draft module from it."""
from __future__ import annotations

import shutil
from pathlib import Path

from prefect import get_run_logger, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from prefect_adapters.progress_artifacts import ProgressArtifact
from specops.backends.base import Backend, Server
from specops.bench.prompts import load_prompts
from specops.draft import store
from specops.draft.gpu_synthesis import synthesis_endpoint
from specops.draft.spec import TrainSpec
from specops.draft.synthesize import openai_answerer, synthesize
from specops.draft.train import RESULT_FILE, train_draft
from specops.draft.train_result import TrainResult
from specops.host.liveness import Watchdog
from specops.pipeline.check import watched_generate
from specops.profile.schema import Profile
from specops.report.artifact_names import artifact_key
from specops.run.progress import within
from specops.run.rundir import RunDir
from specops.run.variant import Variant
from specops.settings import secret, settings
from specops.sources.base import ModelArtifact
from specops.sources.integrity import exclusive, produce_once

EVAL_PROMPTS = 2


@task(cache_policy=NO_CACHE)
def find_training_data(profile: Profile, target: ModelArtifact, cache_dir: Path) -> ModelArtifact | None:
    """The profile's synthesized data set if an earlier run finished it, else None."""
    directory = store.data_dir(cache_dir, profile.draft.train.data, target)
    found = store.finished_data(directory, f"synthesized:{target.source}")
    get_run_logger().info("training data %s: %s", directory, "cached" if found else "to synthesize")
    return found


@task(cache_policy=NO_CACHE, persist_result=False)
def synthesize_training_data(profile: Profile, backend: Backend, server: Server | None, variant: Variant,
                             target: ModelArtifact, cache_dir: Path, run: RunDir) -> ModelArtifact:
    """Answer the profile's prompts with the served target (the profile's backend's server, the seed's vLLM
    container, or no server: its endpoint) into data.jsonl."""
    with run.timed("draft", "synthesize"):
        return _synthesize(profile, backend, server, variant, target, cache_dir, run)


def _synthesize(profile: Profile, backend: Backend, server: Server | None, variant: Variant, target: ModelArtifact,
                cache_dir: Path, run: RunDir) -> ModelArtifact:
    log = get_run_logger()
    directory = store.data_dir(cache_dir, profile.draft.train.data, target)
    waiting = lambda: log.info("waiting for another run synthesizing %s", directory)  # noqa: E731
    with exclusive(store.data_lock(directory), waiting):
        found = store.finished_data(directory, f"synthesized:{target.source}")
        if found is not None:  # the run we waited for finished it
            log.info("training data %s: finished by another run", directory)
            return found
        directory.mkdir(parents=True, exist_ok=True)
        if profile.draft.train.data.server is None:
            return _answer_all(profile, backend, server, variant, target, directory, cache_dir)
        endpoint = synthesis_endpoint(server)  # the seed's vLLM container, served by the flow
        answer = openai_answerer(endpoint.url, endpoint.model, profile.draft.train.data.max_tokens,
                                 profile.serving.request_timeout_s, endpoint.api_key)
        return _answer_all(profile, backend, server, variant, target, directory, cache_dir, answer)


def _answer_all(profile: Profile, backend: Backend, server: Server | None, variant: Variant, target: ModelArtifact,
                directory: Path, cache_dir: Path, chat_answer=None) -> ModelArtifact:
    """Answer the prompts: by the OpenAI-compatible `chat_answer` or endpoint (chat records), else by the
    target served on the profile's backend (raw completions)."""
    log = get_run_logger()
    data = profile.draft.train.data
    if chat_answer is None and data.endpoint:
        chat_answer = openai_answerer(data.endpoint, data.endpoint_model or target.source, data.max_tokens,
                                      profile.serving.request_timeout_s, secret(settings().specops_endpoint_api_key))
    if chat_answer is not None:
        answer, items, text_format = chat_answer, store.prompt_items(data, cache_dir=cache_dir), "chat"
    else:
        watch = Watchdog(server, "training-data synthesis")
        answer = lambda prompt: watched_generate(backend, server, variant, prompt, data.max_tokens, watch)  # noqa: E731
        items, text_format = store.prompt_items(data, _chat_template(target.path), cache_dir), "completion"
    if len(items) < data.num_samples:
        log.warning("only %d prompts available of the %d asked for", len(items), data.num_samples)
    progress = ProgressArtifact(f"{profile.name}: training-data synthesis")
    done = synthesize(items, answer, directory / store.DATA_FILE, concurrency=data.concurrency,
                      text_format=text_format, log=log.info, progress=progress.report)
    progress.done(f"{done.written} answered, {done.reused} already there")
    store.mark_complete(directory)
    return store.finished_data(directory, f"synthesized:{target.source}")


# The cache is looked up in the store (keyed by store.DRAFT_RECIPE and what shapes the draft), never through
# Prefect's task cache: nothing outside it points into it.
@task(cache_policy=NO_CACHE, persist_result=False)
def train_draft_module(train: TrainSpec, length: int, target: ModelArtifact, data: ModelArtifact,
                       cache_dir: Path, run: RunDir, profile: str = "") -> ModelArtifact:
    """Train the draft (ModelOpt heads or a distilled draft model) and export it into the cache, unless the
    cache holds it (`cached`); verified on every call."""
    out = store.draft_dir(cache_dir, train, length, target, data)
    cached = produce_once(out, lambda: store.is_complete(out), lambda: _train(train, length, target, data, out, run,
                                                                             profile))
    get_run_logger().info("draft %s: %s", out, "cached" if cached else "trained")
    result = TrainResult.read(out / RESULT_FILE)
    return ModelArtifact(result.export_dir, f"trained:{train.mode}", store.verified_export(out, result.export_dir),
                         extra={"train_result": str(out / RESULT_FILE)}, cached=cached)


def _train(train: TrainSpec, length: int, target: ModelArtifact, data: ModelArtifact, out: Path, run: RunDir,
           profile: str) -> None:
    scratch = store.training_dir(out)
    shutil.rmtree(scratch, ignore_errors=True)
    holdout = load_prompts("humaneval")[:EVAL_PROMPTS]
    progress = ProgressArtifact(f"draft training ({train.mode})")
    with run.timed("draft", "train"):
        train_draft(train, length, target.path, data.path, scratch, log=get_run_logger().info, eval_prompts=holdout,
                    progress=within(progress.report, 0.0, 0.9), profile=profile)  # then export, held-out acceptance
    store.publish_draft(scratch, out)
    progress.done("trained and exported")


@task(cache_policy=NO_CACHE, persist_result=False)
def publish_training(draft: ModelArtifact, run: RunDir, profile_name: str) -> TrainResult:
    """Copy the training record into the run directory and show it as a Prefect artifact."""
    result = TrainResult.read(Path(draft.extra["train_result"]))
    result.write(run.path / RESULT_FILE)
    create_markdown_artifact(key=artifact_key(profile_name, "training"), markdown=training_markdown(result),
                             description=f"{profile_name}: draft training")
    get_run_logger().info("draft %s: train %.0fs, acceptance %s", result.mode, result.train_seconds,
                          result.acceptance or "not measured")
    return result


def training_markdown(result: TrainResult) -> str:
    rows = [("mode", result.mode), ("sequences / tokens", f"{result.sequences} / {result.tokens}"),
            ("steps", result.steps), ("training time", f"{result.train_seconds:.0f} s"),
            ("target pass (hidden states cached)", f"{result.prepare_seconds:.0f} s"),
            ("final loss", f"{result.final_loss:.4f}")]
    rows += [(f"train {k}", f"{v:.3f}") for k, v in result.train_accuracy.items()]
    rows += [(f"held-out {k}", f"{v:.3f}") for k, v in result.acceptance.items()]
    return "\n".join(["| | |", "|---|---|"] + [f"| {k} | {v} |" for k, v in rows])


def _chat_template(target_dir: Path):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(target_dir))
    if not getattr(tokenizer, "chat_template", None):
        return None
    return lambda text: tokenizer.apply_chat_template([{"role": "user", "content": text}],
                                                     add_generation_prompt=True, tokenize=False)
