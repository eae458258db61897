"""Validate the profile, open the run directory, check this machine can run it."""
from __future__ import annotations

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE

from specops.backends.base import Backend, PrerequisiteError
from specops.bench.tool import BenchTool
from specops.pipeline.backend import preflight
from specops.profile.loader import LoadedProfile, load_profile
from specops.rundir import RunDir


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
def create_run_dir(loaded: LoadedProfile, run_id: str | None) -> RunDir:
    """Create artifacts/<profile>/<run-id>/ and write the resolved profile into it."""
    run = RunDir.create(loaded.profile.name, run_id)
    provenance = {"_source": str(loaded.path), "_overrides": list(loaded.overrides)}
    run.write_yaml("profile.yaml", loaded.resolved | provenance)
    run.mark_started()
    get_run_logger().info("run directory %s", run.path)
    return run
