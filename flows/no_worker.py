"""The `no-worker-alert` flow: what prefect.yaml's automation runs for each specops flow run that goes Late.

Late alone says nothing: a pool's only worker may be busy (a GPU deployment's ENQUEUE, a worker's
--limit). So the flow reads the run's pool and its workers when it runs, and says "no worker" only
when the run still waits and no worker of its pool is alive: an event (specops.pool.no-worker), an
alert through the same block the regression alerts use, and the reason on the Late run's own page.
"""
from __future__ import annotations

from datetime import UTC, datetime

from prefect import flow, get_run_logger

from specops.fleet.deployments import ALERT_BLOCK
from specops.fleet.pools import is_live, no_worker_text
from tasks.alert import send_notification
from tasks.pool_check import emit_no_worker_event, explain_on_the_run, read_late_run, read_pool_workers


@flow(name="no-worker-alert", log_prints=True)
def no_worker_alert(flow_run_id: str, block: str = ALERT_BLOCK) -> bool:
    """Alert when the Late flow run `flow_run_id` waits on a pool no live worker serves; True when it did."""
    logger = get_run_logger()
    late = read_late_run(flow_run_id)
    if not late.waiting or late.pool is None:
        logger.info("flow run %s is %s (pool %s): no alert", late.run_name, late.state_name, late.pool)
        return False
    workers = read_pool_workers(late.pool)
    now = datetime.now(UTC)
    if any(is_live(w, now) for w in workers):
        logger.info("flow run %s is Late on %s, which has a live worker (busy): no alert", late.run_name, late.pool)
        return False
    subject, body = no_worker_text(late.pool, late.run_name, late.run_id, late.deployment, workers, now)
    logger.warning("%s", body)
    emit_no_worker_event(late, body)
    explain_on_the_run(late, body)
    send_notification(block, subject, body, {"event": "no-worker", "pool": late.pool, "flow_run_id": late.run_id,
                                             "flow_run": late.run_name, "deployment": late.deployment})
    return True
