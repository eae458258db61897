"""Start and stop servers. Never cached: a server is a live process, not a result."""
from __future__ import annotations

from pathlib import Path

from prefect import get_run_logger, runtime

from prefect_adapters.step import step
from specops.backends.base import Backend, Server
from specops.pipeline.render import start_variant, stop_variant
from specops.run.rundir import RunDir
from specops.run.variant import Variant


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
