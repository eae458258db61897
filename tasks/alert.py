"""Send an alert through a Prefect block: a Webhook, or any notification block."""
from __future__ import annotations

import json
from typing import Any

from prefect import get_run_logger

from prefect_adapters.alert_block import deliver
from prefect_adapters.step import step


def alert_text(payload: dict[str, Any]) -> tuple[str, str]:
    """(subject, body) of the alert."""
    subject = f"specops regression: {payload.get('profile')} {payload.get('metric')}"
    body = (f"{payload.get('profile')}: {payload.get('metric')} = {payload.get('value')} against a baseline of "
            f"{payload.get('baseline')} (threshold x{payload.get('threshold')}), in runs "
            f"{', '.join(payload.get('runs') or [])}")
    return subject, body


@step(retries=2, retry_delay_seconds=10)
def send_alert(block: str, payload: dict[str, Any]) -> None:
    """POST the regression's payload to a Webhook block, or notify() through a notification block (Slack,
    email...). `block` is "<block type slug>/<block name>", e.g. webhook/specops-regression."""
    subject, body = alert_text(payload)
    sent = deliver(block, subject, body, payload)
    get_run_logger().info("alert sent through %s to %s: %s", block, sent.where, json.dumps(payload)[:500])


@step(retries=2, retry_delay_seconds=10)
def send_notification(block: str, subject: str, body: str, payload: dict[str, Any]) -> None:
    """One alert, its text given, through `block` (as send_alert)."""
    sent = deliver(block, subject, body, payload)
    get_run_logger().info("alert sent through %s to %s: %s", block, sent.where, subject)
