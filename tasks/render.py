"""Render model repositories; cached by profile sections and model content across runs."""
from __future__ import annotations

from pathlib import Path

from prefect import get_run_logger, task

from specops.backends.base import Variant
from specops.profile.schema import Profile
from specops.render import RECIPE, render_repository as render
from specops.sources.base import ModelArtifact
from tasks.caching import ContentKey


@task(cache_policy=ContentKey(recipe=RECIPE), persist_result=True)
def render_repository(profile: Profile, variant: Variant, target: ModelArtifact, draft: ModelArtifact | None,
                      cache_dir: Path) -> Path:
    """Render the variant's model repository into the cache (content-addressed)."""
    repo = render(profile, variant, target, draft, cache_dir)
    get_run_logger().info("rendered %s repository: %s", variant.name, repo)
    return repo
