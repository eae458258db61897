"""What a work pool needs and what to say when nobody serves it: the worker command, the blocks its runs
need, the pool's description, whether a pool's workers are alive, and the "no worker" alert.

Prefect-free: flows/no_worker.py feeds it what the API says; the Makefile writes the description
(`specops deployments --pool-description POOL`) into the pool when `make up`/`make deploy` creates it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import urlsplit, urlunsplit

from specops.fleet.deployments import ALERT_BLOCK, CPU_POOL, GPU_POOL, HF_TOKEN_BLOCK, NO_WORKER_EVENT, pool_env

POOL_RESOURCE_PREFIX = "specops.pool."
# Prefect's foreman calls a worker offline after 3 missed heartbeats (PREFECT_SERVER_SERVICES_FOREMAN_
# INACTIVITY_HEARTBEAT_MULTIPLE, prefect/server/services/foreman.py), but only on its 15 s loop: judged
# here from the heartbeat itself, so a worker killed a minute ago is not taken for a live one.
HEARTBEAT_MULTIPLE = 3
FALLBACK_HEARTBEAT_S = 30  # a worker that reports no interval (the foreman's fallback_heartbeat_interval_seconds)


def worker_command(pool: str) -> str:
    """The command that starts a worker serving `pool`, run from a checkout's root after `make install`."""
    return f"PATH=$PWD/.venv/bin:$PATH prefect worker start --pool {pool} --type process"


# A block reference in a job template's value: {{ prefect.blocks.<type>.<name> }}
_BLOCK_REFERENCE = re.compile(r"\{\{\s*prefect\.blocks\.([\w-]+)\.([\w-]+)\s*\}\}")


def pool_blocks(pool: str) -> list[str]:
    """The blocks a worker of `pool` resolves for its runs, read from the environment its base job template
    adds (specops/fleet/deployments.py pool_env), as `<type>/<name>`."""
    return [f"{kind}/{name}" for value in pool_env(pool).values() for kind, name in _BLOCK_REFERENCE.findall(value)]


def blocks_hint(pool: str) -> str:
    if not pool_blocks(pool):
        return "Its runs need no block."
    return (f"Its runs need the Secret block {HF_TOKEN_BLOCK} (the Hugging Face token; without it a run crashes "
            "at submission: \"Block not found: 'hf-token' of type 'secret'\"), saved once on this server: "
            "docs/how-to/gpu-worker.md.")


def pool_description(pool: str) -> str:
    """The pool's description in the UI: what runs here, the exact worker command, the blocks it needs."""
    what = {CPU_POOL: "specops runs on CPU (embedded and vLLM-CPU profiles, regression, alerts); `make up` "
                      "starts one worker here.",
            GPU_POOL: "specops runs that need a GPU (Docker with the NVIDIA Container Toolkit on the worker's "
                      "host); nothing starts a worker here for you."}[pool]
    return (f"{what} Start a worker on a host with the specops checkout (export PREFECT_API_URL=<this server>/api "
            f"there): `{worker_command(pool)}`. {blocks_hint(pool)} A run Late here with no live worker raises "
            f"the event {NO_WORKER_EVENT} and an alert through the block {ALERT_BLOCK}.")


@dataclass(frozen=True)
class LateRun:
    """A flow run the automation saw go Late, as the API reads it when the check runs."""
    run_id: str
    run_name: str
    pool: str | None
    deployment: str | None  # flow/deployment
    state_name: str

    @property
    def waiting(self) -> bool:
        """Still waiting for a worker (a run picked up, cancelled or deleted meanwhile is nobody's alarm)."""
        return self.state_name in ("Late", "Scheduled")


@dataclass(frozen=True)
class WorkerSeen:
    """A worker as the Prefect API lists it for a pool."""
    name: str
    status: str  # Prefect's WorkerStatus value: ONLINE, OFFLINE
    last_heartbeat: datetime | None
    heartbeat_interval_s: int | None


def is_live(worker: WorkerSeen, now: datetime) -> bool:
    """ONLINE with a heartbeat within HEARTBEAT_MULTIPLE intervals. A worker busy with runs still
    heartbeats: a run Late behind it is waiting, not unserved."""
    if worker.status != "ONLINE" or worker.last_heartbeat is None:
        return False
    interval = worker.heartbeat_interval_s or FALLBACK_HEARTBEAT_S
    return now - worker.last_heartbeat <= timedelta(seconds=interval * HEARTBEAT_MULTIPLE)


def describe_workers(workers: list[WorkerSeen], now: datetime) -> str:
    if not workers:
        return "no worker has ever polled it"
    seen = [f"{w.name} ({w.status.lower()}, last heartbeat "
            + (f"{(now - w.last_heartbeat).total_seconds():.0f}s ago)" if w.last_heartbeat else "never)")
            for w in sorted(workers, key=lambda w: w.name)]
    return "its workers are gone: " + ", ".join(seen[:5]) + (f" and {len(seen) - 5} more" if len(seen) > 5 else "")


def no_worker_text(pool: str, run_name: str, run_id: str, deployment: str | None, workers: list[WorkerSeen],
                    now: datetime) -> tuple[str, str]:
    """(subject, body) of the alert for a run Late on a pool that no live worker serves."""
    what = f"flow run {run_name} ({run_id})" + (f" of {deployment}" if deployment else "")
    subject = f"specops: no worker serves {pool}: {what} is Late"
    body = (f"{what} is Late: no live worker serves the work pool {pool} ({describe_workers(workers, now)}). "
            f"Start one: `{worker_command(pool)}`. {blocks_hint(pool)}")
    return subject, body


def pool_resource(pool: str) -> dict[str, str]:
    return {"prefect.resource.id": f"{POOL_RESOURCE_PREFIX}{pool}", "prefect.resource.name": pool}


def masked_url(url: str) -> str:
    """A URL to print: scheme, host, port and first path segment; the rest (a Slack or Discord webhook's
    token is its path; a token may be a query) and any user:password@ shown as ***."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    if parts.username or parts.password:
        host = f"***@{host}"
    segments = parts.path.split("/")  # "/services/T0/B0/x" -> ["", "services", "T0", "B0", "x"]
    path = "/".join(segments[:2]) + ("/***" if any(segments[2:]) else "")
    return urlunsplit((parts.scheme, host, path, "***" if parts.query else "", "***" if parts.fragment else ""))
