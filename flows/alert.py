"""The `regression-alert` flow: what prefect.yaml's automation runs for each regression event.

A deployment trigger (the only kind of automation `prefect deploy` creates in Prefect 3.8.8:
prefect/cli/deploy/_triggers.py) can only run a deployment, so the notification is this small flow:
it hands the event's payload to a block the operator configured (a Webhook, or a Slack/email/...
notification block), named by the deployment's `block` parameter.
"""
from __future__ import annotations

from typing import Any

from prefect import flow

from specops.fleet.deployments import ALERT_BLOCK
from tasks.alert import send_alert


@flow(name="regression-alert", log_prints=True)
def regression_alert(payload: dict[str, Any], block: str = ALERT_BLOCK) -> None:
    """Notify about one `specops.regression.detected` event through `block`."""
    send_alert(block, payload)
