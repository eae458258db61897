"""Start and stop a variant's server, recorded so a dead run's servers can be reaped."""
from __future__ import annotations

import time
from pathlib import Path

from specops import janitor
from specops.backends.base import Server, Variant, load_backend
from specops.profile.schema import Profile
from specops.render import stage_repository
from specops.rundir import RunDir


def start_variant(profile: Profile, variant: Variant, repo: Path, run: RunDir, owner: str | None) -> Server:
    staged = stage_repository(repo, run.path / "repository" / variant.name)
    log_path = run.logs() / f"server-{variant.name}.log"
    server = load_backend(profile).launch(variant, staged, log_path)
    record = server.record() | {"owner": owner, "run_dir": str(run.path), "what": f"{profile.name}/{variant.name}"}
    janitor.register(record)
    run.write_json(f"servers/{variant.name}.json", record | {"started_at": time.time()})
    return server


def stop_variant(server: Server, timeout_s: float) -> None:
    try:
        server.stop(timeout_s)
    finally:
        janitor.unregister(server.record())
