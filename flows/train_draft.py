"""The `train-draft` flow: synthesize data with the served target, train the draft, export.

The same sequence (flows/prepare.py) is the draft step of `specdec` when a profile's draft is `train:`.
"""
from __future__ import annotations

from prefect import flow
from prefect.states import State

from flows.prepare import prepare_trained_draft
from prefect_adapters.parameters import Overrides, ProfileName, RunId
from prefect_adapters.reaping import reap_servers
from prefect_adapters.refusal import loaded_or_refused
from specops.host import tracking
from specops.pipeline.backend import backend_for, tool_for
from specops.settings import cache_root
from tasks.models import download_model
from tasks.profile import check_prerequisites, create_run_dir


@flow(name="train-draft", on_cancellation=[reap_servers], on_crashed=[reap_servers], log_prints=True)
def train_draft(profile: ProfileName = "eagle3-local", overrides: Overrides = (),
                run_id: RunId = "") -> dict | State:
    """Train (or find cached) the draft module a profile's `draft.train` section describes."""
    loaded = loaded_or_refused(profile, overrides)
    if isinstance(loaded, State):
        return loaded
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
        run.say_failed(step, variant, f"{type(error).__name__}: {error}")
        tracking.untrack_run(run.path)
        raise
    run.set_status("ok")
    tracking.untrack_run(run.path)
    return {"export_dir": str(draft.path), "sha256": draft.sha256, **result.to_json()}
