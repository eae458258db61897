"""Build engines and render model repositories; cached by backend settings and model content across runs."""
from __future__ import annotations

from pathlib import Path

from prefect import get_run_logger, task

from specops.backends.base import Backend
from specops.pipeline.render import RECIPE, build_engines
from specops.pipeline.render import render_repository as render
from specops.rundir import RunDir
from specops.sources.base import ModelArtifact
from specops.variant import Variant
from tasks.caching import ContentKey, locked


@task(cache_policy=locked(ContentKey(recipe=RECIPE, ignore=("run",))), persist_result=True)
def build_engine(backend: Backend, variant: Variant, target: ModelArtifact, draft: ModelArtifact | None,
                 cache_dir: Path, run: RunDir) -> Path | None:
    """Convert and build the variant's engines (TRT-LLM engine backend; nothing for the others)."""
    with run.timed("build", variant.name):
        engines = build_engines(backend, variant, target, draft, cache_dir)
    get_run_logger().info("%s engines: %s", variant.name, engines or "none needed by this backend")
    return engines


@task(cache_policy=locked(ContentKey(recipe=RECIPE, ignore=("run",))), persist_result=True)
def render_repository(backend: Backend, variant: Variant, target: ModelArtifact, draft: ModelArtifact | None,
                      cache_dir: Path, engines: Path | None, run: RunDir) -> Path:
    """Render the variant's model repository into the cache (content-addressed)."""
    with run.timed("render", variant.name):
        repo = render(backend, variant, target, draft, cache_dir, engines)
    get_run_logger().info("rendered %s repository: %s", variant.name, repo)
    return repo
