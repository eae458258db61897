"""What a pool's description and the "no worker" alert say, whether a worker counts as alive, how a URL is
printed, and that the automation prefect.yaml registers starts the check for a specops run going Late,
but not for the check's own run (which would start another, and so on, on a CPU pool without worker)."""
from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
import yaml

from specops.fleet.deployments import ALERT_BLOCK, CPU_POOL, GPU_POOL, NO_WORKER, NO_WORKER_EVENT
from specops.fleet.pools import (
    LateRun,
    WorkerSeen,
    is_live,
    masked_url,
    no_worker_text,
    pool_blocks,
    pool_description,
)
from specops.fleet.prefect_yaml import render

NOW = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)


def test_each_pools_description_gives_the_exact_worker_command_and_the_blocks_its_runs_need():
    gpu, cpu = pool_description(GPU_POOL), pool_description(CPU_POOL)
    assert "prefect worker start --pool specops-gpu --type process" in gpu
    assert "Secret block hf-token" in gpu and pool_blocks(GPU_POOL) == ["secret/hf-token"]
    assert "prefect worker start --pool specops-cpu --type process" in cpu
    assert "hf-token" not in cpu and "need no block" in cpu and pool_blocks(CPU_POOL) == []
    assert all(NO_WORKER_EVENT in d and ALERT_BLOCK in d for d in (gpu, cpu))


def test_the_alert_names_the_pool_the_run_its_deployment_what_was_seen_and_the_fix():
    gone = WorkerSeen("gpu-host-1", "OFFLINE", NOW - timedelta(minutes=7), 30)
    subject, body = no_worker_text(GPU_POOL, "brisk-otter", "1234", "specdec/eagle3-trtllm", [gone], NOW)
    assert subject == "specops: no worker serves specops-gpu: flow run brisk-otter (1234) of specdec/eagle3-trtllm " \
                      "is Late"
    assert "gpu-host-1 (offline, last heartbeat 420s ago)" in body
    assert "`PATH=$PWD/.venv/bin:$PATH prefect worker start --pool specops-gpu --type process`" in body
    assert "Secret block hf-token" in body
    _, never = no_worker_text(CPU_POOL, "r", "1", None, [], NOW)
    assert "no worker has ever polled it" in never and "hf-token" not in never and " of " not in never.split(":")[0]


@pytest.mark.parametrize(("worker", "live"), [
    (WorkerSeen("busy", "ONLINE", NOW - timedelta(seconds=20), 30), True),  # running runs still heartbeats
    (WorkerSeen("late-beat", "ONLINE", NOW - timedelta(seconds=89), 30), True),
    (WorkerSeen("killed", "ONLINE", NOW - timedelta(seconds=91), 30), False),  # the foreman has not caught up
    (WorkerSeen("no-interval", "ONLINE", NOW - timedelta(seconds=80), None), True),  # the 30 s fallback
    (WorkerSeen("offline", "OFFLINE", NOW - timedelta(seconds=5), 30), False),
    (WorkerSeen("never", "ONLINE", None, 30), False),
])
def test_a_worker_is_live_while_online_and_heartbeating(worker, live):
    assert is_live(worker, NOW) is live


def test_only_a_run_still_waiting_is_alerted_on():
    assert LateRun("1", "r", GPU_POOL, None, "Late").waiting
    assert not LateRun("1", "r", GPU_POOL, None, "Running").waiting
    assert not LateRun("1", "r", GPU_POOL, None, "Cancelled").waiting


@pytest.mark.parametrize(("url", "shown"), [
    ("http://127.0.0.1:4201/alerts", "http://127.0.0.1:4201/alerts"),
    ("https://hooks.slack.com/services/T000/B000/XXXXsecret", "https://hooks.slack.com/services/***"),
    ("https://discord.com/api/webhooks/123/tok", "https://discord.com/api/***"),
    ("https://user:pw@example.com/hook?token=abc", "https://***@example.com/hook?***"),
    ("https://example.com", "https://example.com"),
])
def test_a_url_is_printed_without_its_secret_parts(url, shown):
    assert masked_url(url) == shown


def _automation():
    from prefect.cli.deploy._triggers import _initialize_deployment_triggers

    doc = yaml.safe_load(render())
    (check,) = [d for d in doc["deployments"] if d["entrypoint"] == NO_WORKER]
    (trigger,) = _initialize_deployment_triggers("no-worker-alert/notify", check["triggers"])
    trigger.set_deployment_id(uuid.uuid4())
    return check, trigger, trigger.as_automation()


def _late_event(tags: list[str]):
    from prefect.server.events.schemas.events import ReceivedEvent

    resource = {"prefect.resource.id": f"prefect.flow-run.{uuid.uuid4()}"}
    return ReceivedEvent(event="prefect.flow-run.Late", resource=resource, occurred=NOW, id=uuid.uuid4(),
                         related=[{"prefect.resource.id": f"prefect.tag.{t}", "prefect.resource.role": "tag"}
                                  for t in tags])


def test_the_automation_checks_each_specops_run_going_late_but_not_its_own_runs():
    from prefect.server.events.schemas.automations import EventTrigger

    from flows.no_worker import no_worker_alert

    check, trigger, automation = _automation()
    # the server's model of the trigger decides which events fire it (prefect/server/events/triggers.py)
    served = EventTrigger.model_validate(automation.trigger.model_dump())
    assert [a.type for a in automation.actions] == ["run-deployment"]
    assert automation.trigger.expect == {"prefect.flow-run.Late"} and automation.trigger.posture.value == "Reactive"
    assert served.covers(_late_event(["gpu", "specops", "trtllm"]))
    assert not served.covers(_late_event(check["tags"]))  # the check's own run, Late
    assert "specops" not in check["tags"] and check["work_pool"]["name"] == CPU_POOL
    assert set(trigger.parameters) | set(check["parameters"]) == set(no_worker_alert.parameters.properties)
