"""The `train-draft` flow: synthesize data with the served target, train the draft, export.

The same sequence is the draft step of `specdec` when a profile's draft is `train:`.
"""
from __future__ import annotations

from functools import partial
from pathlib import Path

from prefect import flow

from prefect_adapters.reaping import reap_servers
from prefect_adapters.slot_limits import hold_slots
from specops.backends.base import Backend
from specops.draft.train_result import TrainResult
from specops.pipeline.backend import backend_for, tool_for
from specops.profile.loader import LoadedProfile
from specops.rundir import RunDir, cache_root
from specops.slots import slot_names
from specops.sources.base import ModelArtifact
from specops.teardown import teardown_quietly
from specops.variant import Variant, base_method
from tasks.draft import find_training_data, publish_training, synthesize_training_data, train_draft_module
from tasks.models import download_model
from tasks.profile import check_prerequisites, create_run_dir, validate_profile
from tasks.render import build_engine, render_repository
from tasks.serve import start_server, stop_server


def prepare_trained_draft(loaded: LoadedProfile, backend: Backend, target: ModelArtifact, run: RunDir,
                          cache_dir: Path) -> tuple[ModelArtifact, TrainResult]:
    """Data (cached, or synthesized by serving the target with speculation off), then training."""
    profile = loaded.profile
    # The synthesis server and the training use the accelerator: they hold its slots as a benchmark does.
    with hold_slots(slot_names(profile.serving.exclusive, backend.gpus())):
        data = find_training_data(profile, target, cache_dir)
        if data is None:
            data = _synthesize(loaded, backend, target, run, cache_dir)
        # Only what shapes the draft keys its cache entry: other profile edits keep the cached draft.
        draft = train_draft_module(profile.draft.train, profile.method.draft_length(), target, data, cache_dir, run,
                                   profile.name)
    return draft, publish_training(draft, run, profile.name)


def _synthesize(loaded: LoadedProfile, backend: Backend, target: ModelArtifact, run: RunDir,
                cache_dir: Path) -> ModelArtifact:
    """Serve the target with speculation off (unless an endpoint answers) and answer the prompts."""
    profile = loaded.profile
    # The target with speculation off, with as many instances as requests in flight.
    synthesis = Variant("synthesis", base_method(), parallel=profile.draft.train.data.concurrency)
    server = None
    data = profile.draft.train.data
    if not data.endpoint and data.server is None:  # else an endpoint, or the seed's vLLM container, answers
        engines = build_engine(backend, synthesis, target, None, cache_dir, run).value
        repo = render_repository(backend, synthesis, target, None, cache_dir, engines, run).value
        server = start_server(backend, synthesis, repo, run)
    try:
        data = synthesize_training_data(profile, backend, server, synthesis, target, cache_dir, run)
    except BaseException:
        if server is not None:  # a server that will not stop must not hide why synthesis failed
            teardown_quietly(partial(stop_server, server, profile.serving.stop_timeout_s, run, synthesis),
                             "stopping the synthesis server")
        raise
    if server is not None:
        stop_server(server, profile.serving.stop_timeout_s, run, synthesis)
    return data


@flow(name="train-draft", on_cancellation=[reap_servers], on_crashed=[reap_servers], log_prints=True)
def train_draft(profile: str = "eagle3-local", overrides: list[str] | None = None,
                run_id: str | None = None) -> dict:
    """Train (or find cached) the draft module a profile's `draft.train` section describes."""
    loaded = validate_profile(profile, list(overrides or []))
    if loaded.profile.draft is None or loaded.profile.draft.train is None:
        raise ValueError(f"profile {loaded.profile.name}: no draft.train section; nothing to train")
    run = create_run_dir(loaded, run_id)
    try:
        backend = backend_for(loaded.profile)
        check_prerequisites(backend, tool_for(loaded.profile), run)
        cache_dir = cache_root()
        target = download_model(loaded.profile.target.source, cache_dir, run, "target", backend.registration.hub_files)
        draft, result = prepare_trained_draft(loaded, backend, target, run, cache_dir)
    except BaseException as error:
        step, variant = run.progress.failed_at or ("train-draft", None)
        run.set_status("failed", step, variant, f"{type(error).__name__}: {error}")
        raise
    run.set_status("ok")
    return {"export_dir": str(draft.path), "sha256": draft.sha256, **result.to_json()}
