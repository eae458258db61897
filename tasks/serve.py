"""A variant's server from its models: build its engines and render its model repository into the verified cache
(keyed by backend settings and model content), then start and stop the server. A server is never cached: it is a
live process, not a result."""
from __future__ import annotations

from pathlib import Path

from prefect import get_run_logger, runtime

from prefect_adapters.step import step
from specops.backends.base import Backend, Server
from specops.pipeline.render import build_engines, start_variant, stop_variant
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


@step(timed="serve")
def start_server(backend: Backend, variant: Variant, repo: Path, run: RunDir) -> Server:
    """Start the variant's server and wait until it and the model are ready."""
    server = start_variant(backend, variant, repo, run, owner=str(runtime.flow_run.id or ""))
    get_run_logger().info("%s server ready (log: %s)", variant.name, server.log_path)
    return server


@step(timed="serve", announce=False)  # also teardown: not a step status.json names
def stop_server(server: Server, timeout_s: float, run: RunDir, variant: Variant) -> None:
    """Stop a server within timeout_s (SIGTERM, then SIGKILL), its children included."""
    stop_variant(server, timeout_s)
    get_run_logger().info("%s server stopped", variant.name)
