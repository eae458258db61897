"""Send a regression alert through a Prefect block: a Webhook, or any notification block."""
from __future__ import annotations

import asyncio
import json
from typing import Any

from prefect import get_run_logger, task
from prefect.blocks.abstract import NotificationBlock
from prefect.blocks.core import Block
from prefect.blocks.webhook import Webhook
from prefect.cache_policies import NO_CACHE


def alert_text(payload: dict[str, Any]) -> tuple[str, str]:
    """(subject, body) of the alert."""
    subject = f"specops regression: {payload.get('profile')} {payload.get('metric')}"
    body = (f"{payload.get('profile')}: {payload.get('metric')} = {payload.get('value')} against a baseline of "
            f"{payload.get('baseline')} (threshold x{payload.get('threshold')}), in runs "
            f"{', '.join(payload.get('runs') or [])}")
    return subject, body


@task(cache_policy=NO_CACHE, persist_result=False, retries=2, retry_delay_seconds=10)
def send_alert(block: str, payload: dict[str, Any]) -> None:
    """POST the payload to a Webhook block, or notify() through a notification block (Slack, email...).
    `block` is "<block type slug>/<block name>", e.g. webhook/specops-regression."""
    loaded = Block.load(block)
    subject, body = alert_text(payload)
    if isinstance(loaded, Webhook):
        response = asyncio.run(loaded.call({"subject": subject, "text": body, **payload}))
        response.raise_for_status()
    elif isinstance(loaded, NotificationBlock):
        loaded.notify(body, subject)
    else:
        raise TypeError(f"block {block} is a {type(loaded).__name__}: give a Webhook block or a notification "
                        "block (e.g. slack-webhook/<name>)")
    get_run_logger().info("alert sent through %s: %s", block, json.dumps(payload)[:500])
