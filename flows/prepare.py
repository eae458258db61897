"""The models a run serves: the target and the draft, downloaded and verified, or the draft trained.

Shared by the specdec, sweep and train-draft flows, so that no flow imports another.
"""
from __future__ import annotations

from pathlib import Path

from flows.serving import served
from prefect_adapters.slot_limits import hold_slots
from specops.backends.base import Backend
from specops.cost.slots import run_slots
from specops.draft.spec import TrainResult
from specops.pipeline.answer_sources import answer_source
from specops.pipeline.summarize import RunFacts
from specops.profile.loader import LoadedProfile
from specops.run.rundir import RunDir
from specops.run.variant import Variant
from specops.sources.entry_lock import Stored
from specops.sources.schemes import ModelArtifact, Models
from tasks.draft import find_training_data, publish_training, synthesize_training_data, train_draft_module
from tasks.models import check_draft_vocabulary, download_backend_sources, download_model
from tasks.serve import build_engine, render_repository


def noted_result(result: ModelArtifact | Stored, facts: RunFacts | None, step: str):
    """A cache step's result (an artifact, or a Stored path), noting in a run's facts whether the cache held it."""
    if facts is not None:
        facts.cached_steps[step] = result.cached
    return result.value if isinstance(result, Stored) else result


def variant_repository(backend: Backend, variant: Variant, models: Models, run: RunDir, facts: RunFacts | None = None):
    """The variant's model repository (its Path): engines built and the repository rendered, each read from the
    cache where it holds them (a run's facts note which)."""
    built = noted_result(build_engine(backend, variant, models, run), facts, f"build {variant.name}")
    return noted_result(render_repository(backend, variant, models, built, run), facts, f"render {variant.name}")


def prepare_models(loaded: LoadedProfile, backend: Backend, run: RunDir, cache_dir: Path, facts: RunFacts) -> Models:
    p = loaded.profile
    files = backend.registration.hub_files  # of a hub repository, only what this backend's loaders read
    target = noted_result(download_model(p.target.source, cache_dir, run, "target", files), facts, "download target")
    facts.models["target"] = target
    download_backend_sources(backend, cache_dir, run)
    draft = None
    if p.draft is not None and p.draft.train is not None:
        draft, _ = prepare_trained_draft(loaded, backend, target, run, cache_dir)
        facts.cached_steps["train draft"] = draft.cached
    elif p.draft is not None:
        draft = noted_result(download_model(p.draft.source, cache_dir, run, "draft", files), facts, "download draft")
        check_draft_vocabulary(target, draft, run)
    if draft is not None:
        facts.models["draft"] = draft
    return Models(target, draft, cache_dir)


def prepare_trained_draft(loaded: LoadedProfile, backend: Backend, target: ModelArtifact, run: RunDir,
                          cache_dir: Path) -> tuple[ModelArtifact, TrainResult]:
    """Data (cached, or synthesized by serving the target with speculation off), then training."""
    profile = loaded.profile
    # The synthesis server and the training use the accelerator: they hold its slots as a benchmark does.
    with hold_slots(run_slots(profile.serving.exclusive, backend.gpus()), f"{profile.name} run {run.run_id}", run):
        data = find_training_data(profile, target, cache_dir) or synthesize(loaded, backend, target, run, cache_dir)
        # Only what shapes the draft keys its cache entry: other profile edits keep the cached draft.
        draft = train_draft_module(profile.draft.train, profile.method.draft_length(), target, data, cache_dir, run,
                                   profile.name)
    return draft, publish_training(draft, run, profile.name)


def synthesize(loaded: LoadedProfile, backend: Backend, target: ModelArtifact, run: RunDir,
               cache_dir: Path) -> ModelArtifact:
    """Answer the prompts with the target served with speculation off: on the seed's vLLM container
    (draft.train.data.server) or the profile's backend; an endpoint (draft.train.data.endpoint) needs no server."""
    profile = loaded.profile
    source = answer_source(profile.draft.train.data)
    backend, variant = source.serving(profile, backend)
    if not source.served:
        return synthesize_training_data(profile, backend, None, variant, target, cache_dir, run)
    repo = variant_repository(backend, variant, Models(target, None, cache_dir), run)
    with served(backend, variant, repo, run, smoke=False) as up:
        return synthesize_training_data(profile, backend, up.server, variant, target, cache_dir, run)
