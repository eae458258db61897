"""Build engines and render model repositories into the verified cache, keyed by backend settings and model content."""
from __future__ import annotations

from pathlib import Path

from prefect import get_run_logger

from prefect_adapters.step import step
from specops.backends.base import Backend
from specops.pipeline.render import build_engines
from specops.pipeline.render import render_repository as render
from specops.run.rundir import RunDir
from specops.run.variant import Variant
from specops.sources.entry_lock import Stored
from specops.sources.schemes import Models


@step(timed="build")
def build_engine(backend: Backend, variant: Variant, models: Models, run: RunDir) -> Stored[Path | None]:
    """Convert and build the variant's engines (TRT-LLM engine backend; nothing for the others)."""
    engines = build_engines(backend, variant, models.target, models.draft, models.cache)
    get_run_logger().info("%s engines (%s): %s", variant.name, "cached" if engines.cached else "built",
                          engines.value or "none needed by this backend")
    return engines


@step(timed="render")
def render_repository(backend: Backend, variant: Variant, models: Models, engines: Path | None, run: RunDir
                      ) -> Stored[Path]:
    """Render the variant's model repository into the cache (content-addressed)."""
    repo = render(backend, variant, models.target, models.draft, models.cache, engines)
    get_run_logger().info("%s %s repository: %s", "cached" if repo.cached else "rendered", variant.name, repo.value)
    return repo
