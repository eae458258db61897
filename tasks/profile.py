"""Validate the profile and open the run directory, before anything is downloaded."""
from __future__ import annotations

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE

from specops.backends.base import PrerequisiteError, load_backend
from specops.profile.loader import LoadedProfile, load_profile
from specops.rundir import RunDir


@task(cache_policy=NO_CACHE)
def validate_profile(profile: str, overrides: list[str]) -> LoadedProfile:
    """Load and fully validate a profile (unknown keys, methods, backends and pairs fail here)."""
    loaded = load_profile(profile, overrides)
    get_run_logger().info("profile %s (%s) valid, sha256 %s", loaded.profile.name, loaded.path, loaded.sha256[:12])
    return loaded


@task(cache_policy=NO_CACHE)
def check_prerequisites(loaded: LoadedProfile) -> None:
    """Stop at once, saying what is missing, when this machine cannot run the profile's backend."""
    problems = load_backend(loaded.profile).preflight()
    if problems:
        raise PrerequisiteError(loaded.profile.name, problems)
    get_run_logger().info("backend %s: prerequisites present", loaded.profile.backend.kind)


@task(cache_policy=NO_CACHE)
def create_run_dir(loaded: LoadedProfile, run_id: str | None) -> RunDir:
    """Create artifacts/<profile>/<run-id>/ and write the resolved profile into it."""
    run = RunDir.create(loaded.profile.name, run_id)
    run.write_yaml("profile.yaml", loaded.resolved | {"_source": str(loaded.path), "_overrides": list(loaded.overrides)})
    run.mark_started()
    get_run_logger().info("run directory %s", run.path)
    return run
