"""Read a Late flow run and its pool's workers; raise the "no worker" event."""
from __future__ import annotations

import logging
from datetime import UTC, datetime
from uuid import UUID

from prefect import get_client
from prefect.events import emit_event

from prefect_adapters.step import step
from specops.fleet.deployments import NO_WORKER_EVENT
from specops.fleet.pools import LateRun, WorkerSeen, pool_resource, worker_command
from specops.settings import settings

FLOW_RUN_RESOURCE = "prefect.flow-run."


@step
def read_late_run(flow_run_id: str) -> LateRun:
    """The run, its pool and deployment. `flow_run_id` may be the event's resource id, prefect.flow-run.<id>."""
    run_id = flow_run_id.removeprefix(FLOW_RUN_RESOURCE)
    with get_client(sync_client=True) as client:
        run = client.read_flow_run(run_id)
        deployment = None
        if run.deployment_id:
            deployment = f"{client.read_flow(run.flow_id).name}/{client.read_deployment(run.deployment_id).name}"
    return LateRun(run_id=str(run.id), run_name=run.name, pool=run.work_pool_name, deployment=deployment,
                   state_name=run.state.name if run.state else "")


@step
def read_pool_workers(pool: str) -> list[WorkerSeen]:
    """Every worker the API knows for the pool, online or not (prefect/server/services/foreman.py marks them)."""
    with get_client(sync_client=True) as client:
        workers = client.read_workers_for_work_pool(pool)
    return [WorkerSeen(name=w.name, status=w.status.value, last_heartbeat=w.last_heartbeat_time,
                       heartbeat_interval_s=w.heartbeat_interval_seconds) for w in workers]


@step
def emit_no_worker_event(late: LateRun, message: str) -> None:
    """specops.pool.no-worker on the pool's resource, the Late run related: what an operator's own
    automation (a page, a ticket) can trigger on."""
    emit_event(
        event=NO_WORKER_EVENT,
        resource=pool_resource(late.pool or ""),
        related=[{"prefect.resource.id": f"{FLOW_RUN_RESOURCE}{late.run_id}", "prefect.resource.role": "flow-run",
                  "prefect.resource.name": late.run_name}],
        payload={"pool": late.pool, "flow_run_id": late.run_id, "flow_run": late.run_name,
                 "deployment": late.deployment, "worker_command": worker_command(late.pool or ""),
                 "message": message},
    )


@step
def explain_on_the_run(late: LateRun, message: str) -> None:
    """The reason on the Late run's own page, where its user looks (it said only "Late"): a log line in its Logs
    tab, which the page opens on (the run never started, so it is the only one), and an artifact in its Artifacts
    tab; both point at the alert inbox when an artifacts server serves one."""
    from prefect.client.schemas.actions import ArtifactCreate, LogCreate

    inbox = f"{settings().specops_artifacts_url}/alerts" if settings().specops_artifacts_url else None
    text = message + (f" (Alerts sent to the artifacts server land in its inbox: {inbox})" if inbox else "")
    run_id = UUID(late.run_id)
    with get_client(sync_client=True) as client:
        client.create_logs([LogCreate(name="specops.no-worker", level=logging.WARNING, message=text,
                                      timestamp=datetime.now(UTC), flow_run_id=run_id)])
        client.create_artifact(ArtifactCreate(
            key=f"no-worker-{late.pool}".lower(), type="markdown", flow_run_id=run_id,
            description=f"why this run waits: no live worker serves {late.pool}",
            data=f"# No worker serves {late.pool}\n\n{text}" + (f"\n\n[alert inbox]({inbox})" if inbox else "")))
