"""The notification block alerts go through: saved by `specops alert setup` (`make up`), used by the alert
flows' tasks and by `specops alert test`.

A Webhook block keeps its URL as a SecretStr (prefect/blocks/webhook.py Webhook.url): the UI and the API
show it masked, and so does everything here (specops.fleet.pools.masked_url).
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import httpx

from specops.fleet.deployments import ALERT_BLOCK
from specops.fleet.pools import masked_url


class AlertBlockError(RuntimeError):
    """The block is missing, of a kind that cannot notify, or its endpoint refused the alert."""


class AlertBlockMissing(AlertBlockError):
    """No block of that name on the server."""


@dataclass(frozen=True)
class Delivered:
    block: str
    where: str  # masked URL, or the block's kind
    status: int | None  # the webhook's HTTP status; None for a notification block


def save_webhook(url: str, block: str = ALERT_BLOCK) -> str:
    """Create or update the Webhook block `block` (`webhook/<name>`) posting to `url`; the masked URL."""
    from prefect.blocks.webhook import Webhook

    kind, _, name = block.partition("/")
    if kind != "webhook" or not name:
        raise AlertBlockError(f"{block}: `specops alert setup` saves a Webhook block, named webhook/<name>")
    Webhook(url=url).save(name, overwrite=True)
    return masked_url(url)


def deliver(block: str, subject: str, body: str, payload: dict[str, Any]) -> Delivered:
    """POST {subject, text, **payload} to a Webhook block, or notify(body, subject) through a notification
    block (Slack, email, ...). `block` is "<block type slug>/<block name>"."""
    from prefect.blocks.abstract import NotificationBlock
    from prefect.blocks.core import Block
    from prefect.blocks.webhook import Webhook

    try:
        loaded = Block.load(block)
    except ValueError as err:  # prefect/blocks/core.py Block._get_block_document: "Unable to find block document"
        if "Unable to find block document" not in str(err):
            raise
        raise AlertBlockMissing(f"no block {block} on the Prefect server: `make up` creates it (ALERT_URL), or "
                              f"`SPECOPS_ALERT_URL=<url> specops alert setup`") from None
    if isinstance(loaded, Webhook):
        where = masked_url(loaded.url.get_secret_value())
        try:
            response = asyncio.run(loaded.call({"subject": subject, "text": body, **payload}))
        except httpx.TransportError as err:  # refused, unreachable, timed out
            raise AlertBlockError(f"{block} could not reach {where}: {type(err).__name__}: {err}") from None
        if response.status_code >= 400:
            raise AlertBlockError(f"{block}: {where} answered HTTP {response.status_code}")
        return Delivered(block, where, response.status_code)
    if isinstance(loaded, NotificationBlock):
        loaded.notify(body, subject)
        return Delivered(block, type(loaded).__name__, None)
    raise AlertBlockError(f"block {block} is a {type(loaded).__name__}: give a Webhook block or a notification "
                          "block (e.g. slack-webhook/<name>)")
