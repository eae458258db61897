"""Synthesize training data with the served target, and train the draft module from it."""
from __future__ import annotations

import shutil
from pathlib import Path

from prefect import get_run_logger
from prefect.artifacts import create_markdown_artifact

from prefect_adapters.progress_artifacts import ProgressArtifact
from prefect_adapters.step import step
from specops.backends.base import Backend, Server
from specops.bench.prompts import load_prompts
from specops.draft import store
from specops.draft.spec import TrainResult, TrainSpec
from specops.draft.synthesize import synthesize
from specops.draft.train import RESULT_FILE, train_draft
from specops.pipeline.answer_sources import answer_source
from specops.profile.schema import Profile
from specops.report.writer import artifact_key
from specops.run.progress import within
from specops.run.rundir import RunDir
from specops.run.variant import Variant
from specops.sources.entry_lock import exclusive, produce_once
from specops.sources.schemes import ModelArtifact

EVAL_PROMPTS = 2


@step
def find_training_data(profile: Profile, target: ModelArtifact, cache_dir: Path) -> ModelArtifact | None:
    """The profile's synthesized data set if an earlier run finished it, else None."""
    directory = store.data_dir(cache_dir, profile.draft.train.data, target)
    found = store.finished_data(directory, f"synthesized:{target.source}")
    get_run_logger().info("training data %s: %s", directory, "cached" if found else "to synthesize")
    return found


@step(timed="draft", label="synthesize")
def synthesize_training_data(profile: Profile, backend: Backend, server: Server | None, variant: Variant,
                             target: ModelArtifact, cache_dir: Path, run: RunDir) -> ModelArtifact:
    """Answer the profile's prompts with the served target (the profile's backend's server, the seed's vLLM
    container, or no server: its endpoint) into data.jsonl."""
    log = get_run_logger()
    directory = store.data_dir(cache_dir, profile.draft.train.data, target)
    waiting = lambda: log.info("waiting for another run synthesizing %s", directory)  # noqa: E731
    with exclusive(store.data_lock(directory), waiting):
        found = store.finished_data(directory, f"synthesized:{target.source}")
        if found is not None:  # the run we waited for finished it
            log.info("training data %s: finished by another run", directory)
            return found
        directory.mkdir(parents=True, exist_ok=True)
        data = profile.draft.train.data
        source = answer_source(data)
        answer = source.answerer(profile, backend, server, variant, target)
        items = source.prompt_items(data, target, cache_dir)
        if len(items) < data.num_samples:
            log.warning("only %d prompts available of the %d asked for", len(items), data.num_samples)
        progress = ProgressArtifact(f"{profile.name}: training-data synthesis")
        done = synthesize(items, answer, directory / store.DATA_FILE, concurrency=data.concurrency,
                          text_format=source.text_format, log=log.info, progress=progress.report)
        progress.done(f"{done.written} answered, {done.reused} already there")
        store.mark_complete(directory)
        return store.finished_data(directory, f"synthesized:{target.source}")


# The store's entry is keyed by store.DRAFT_RECIPE and what shapes the draft.
@step
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
    with run.timed("draft", "train"):  # not @step's: a cache hit, or another run's training waited for, is none
        train_draft(train, length, target.path, data.path, scratch, log=get_run_logger().info, eval_prompts=holdout,
                    progress=within(progress.report, 0.0, 0.9), profile=profile)  # then export, held-out acceptance
    store.publish_draft(scratch, out)
    progress.done("trained and exported")


@step
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

