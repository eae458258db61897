"""Open the run directory of the profile its flow loaded, check this machine can run it."""
from __future__ import annotations

from prefect import get_run_logger

from prefect_adapters.step import step
from specops.backends.base import Backend, PrerequisiteError
from specops.bench.tool import BenchTool
from specops.host import tracking
from specops.pipeline.abandoned import run_profile
from specops.pipeline.backend import preflight
from specops.profile.loader import LoadedProfile
from specops.results.database import masked, results_url
from specops.results.role import RunRole
from specops.results.store import results_problems
from specops.run.rundir import RunDir
from specops.settings import free_space_problem


@step(timed="preflight", label="{backend.config.kind}")
def check_prerequisites(backend: Backend, tool: BenchTool, run: RunDir) -> None:
    """Stop at once, saying what is missing, when this machine cannot run the backend or the tool."""
    if problems := preflight(backend, tool):
        raise PrerequisiteError(backend.deployment.profile, problems)
    get_run_logger().info("backend %s and %s: prerequisites present", backend.config.kind, tool.name)


@step(timed="preflight", label="results")
def check_result_storage(run: RunDir, profile: str) -> None:
    """Where the result goes takes it, before any download: the results database a row (were it lost
    later, the result would still be kept in the run directory), the artifacts disk its minimum of space."""
    if problems := results_problems() + [p for p in [free_space_problem()] if p]:
        raise PrerequisiteError(profile, problems)
    get_run_logger().info("results database %s takes rows", masked(results_url()))


@step
def create_run_dir(loaded: LoadedProfile, run_id: str | None, role: RunRole | None = None) -> RunDir:
    """Create artifacts/<profile>/<run-id>/, write the resolved profile into it and record the run for the janitor
    from this moment (tracking.track_run): killed at any later step, `specops janitor` ends it, with its row where it
    is a run of its own or a member (`role`; None: a sweep's directory, whose cells are the runs, or a training)."""
    run = RunDir.create(loaded.profile.name, run_id)
    run.write_yaml("profile.yaml", run_profile(loaded))
    run.mark_started()
    tracking.track_run(run.path, role.model_dump(mode="json") if role is not None else None)
    get_run_logger().info("run directory %s", run.path)
    return run
