"""Render model repositories; cached by profile sections and model content across runs."""
from __future__ import annotations

from pathlib import Path

from prefect import get_run_logger, task

from specops.backends.base import Variant
from specops.profile.schema import Profile
from specops.render import RECIPE, build_engines
from specops.render import render_repository as render
from specops.sources.base import ModelArtifact
from tasks.caching import ContentKey


@task(cache_policy=ContentKey(recipe=RECIPE), persist_result=True)
def build_engine(profile: Profile, variant: Variant, target: ModelArtifact, draft: ModelArtifact | None,
                 cache_dir: Path) -> Path | None:
    """Convert and build the variant's engines (TRT-LLM engine backend; nothing for the others)."""
    engines = build_engines(profile, variant, target, draft, cache_dir)
    get_run_logger().info("%s engines: %s", variant.name, engines or "none needed by this backend")
    return engines


@task(cache_policy=ContentKey(recipe=RECIPE), persist_result=True)
def render_repository(profile: Profile, variant: Variant, target: ModelArtifact, draft: ModelArtifact | None,
                      cache_dir: Path, engines: Path | None) -> Path:
    """Render the variant's model repository into the cache (content-addressed)."""
    repo = render(profile, variant, target, draft, cache_dir, engines)
    get_run_logger().info("rendered %s repository: %s", variant.name, repo)
    return repo
