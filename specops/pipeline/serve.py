"""Start and stop a variant's server, recorded so a dead run's servers can be reaped."""
from __future__ import annotations

import time
from pathlib import Path

from specops.backends.base import Backend, Server
from specops.host import janitor
from specops.pipeline.render import stage_repository
from specops.run.rundir import RunDir
from specops.run.variant import Variant


def start_variant(backend: Backend, variant: Variant, repo: Path, run: RunDir, owner: str | None) -> Server:
    staged = stage_repository(repo, run.path / "repository" / variant.name)
    log_path = run.logs() / f"server-{variant.name}.log"
    server = backend.launch(variant, staged, log_path)
    record = server.record() | {"owner": owner, "run_dir": str(run.path),
                                "what": f"{backend.deployment.profile}/{variant.name}"}
    janitor.register(record)
    run.write_json(f"servers/{variant.name}.json", record | {"started_at": time.time()})
    return server


def stop_variant(server: Server, timeout_s: float) -> None:
    try:
        server.stop(timeout_s)
    finally:
        janitor.unregister(server.record())
