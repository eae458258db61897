"""Validate the profile, open the run directory, check this machine can run it."""
from __future__ import annotations

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE

from specops.backends.base import Backend, PrerequisiteError
from specops.bench.tool import BenchTool
from specops.pipeline.backend import preflight
from specops.profile.loader import LoadedProfile, load_profile
from specops.results.store import masked, results_problems, results_url
from specops.run.rundir import RunDir, free_space_problem


@task(cache_policy=NO_CACHE)
def validate_profile(profile: str, overrides: list[str]) -> LoadedProfile:
    """Load and fully validate a profile (unknown keys, methods, backends and pairs fail here)."""
    loaded = load_profile(profile, overrides)
    get_run_logger().info("profile %s (%s) valid, sha256 %s", loaded.profile.name, loaded.path, loaded.sha256[:12])
    return loaded


@task(cache_policy=NO_CACHE)
def check_prerequisites(backend: Backend, tool: BenchTool, run: RunDir) -> None:
    """Stop at once, saying what is missing, when this machine cannot run the backend or the tool."""
    with run.timed("preflight", backend.config.kind):
        problems = preflight(backend, tool)
        if problems:
            raise PrerequisiteError(backend.deployment.profile, problems)
    get_run_logger().info("backend %s and %s: prerequisites present", backend.config.kind, tool.name)


@task(cache_policy=NO_CACHE)
def check_result_storage(run: RunDir, profile: str) -> None:
    """Where the result goes takes it, before any download: the results database a row (were it lost
    later, the result would still be kept in the run directory), the artifacts disk its minimum of space."""
    with run.timed("preflight", "results"):
        problems = results_problems() + [p for p in [free_space_problem()] if p]
        if problems:
            raise PrerequisiteError(profile, problems)
    get_run_logger().info("results database %s takes rows", masked(results_url()))


@task(cache_policy=NO_CACHE)
def create_run_dir(loaded: LoadedProfile, run_id: str | None) -> RunDir:
    """Create artifacts/<profile>/<run-id>/ and write the resolved profile into it."""
    run = RunDir.create(loaded.profile.name, run_id)
    provenance = {"_source": str(loaded.path), "_overrides": list(loaded.overrides)}
    run.write_yaml("profile.yaml", loaded.resolved | provenance)
    run.mark_started()
    get_run_logger().info("run directory %s", run.path)
    return run
