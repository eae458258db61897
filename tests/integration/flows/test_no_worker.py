"""A run nobody can pick up, explained; alerts that arrive.

On a real Prefect server (SQLite), the pools created as `make deploy` creates them (base job template and
description), `no-worker-alert/notify` and a GPU deployment deployed by `prefect deploy` from a commit of this
working tree, the alert block saved by `specops alert setup` pointing at a webhook this test serves on
127.0.0.1, and a CPU-pool worker (as `make up` starts) on a host without checkout:

- `specops alert test` reaches the webhook and says where it went; a missing block names the command that
  creates it;
- a run of the GPU deployment, with no GPU worker, goes Late; the automation `prefect deploy` registered runs
  the check on the CPU worker, which raises the event specops.pool.no-worker (resource: the pool; related: the
  run) and posts the alert naming the pool, the run and the worker command, within BOUND_S of the run's
  creation.

The server marks runs Late 2 s after their start time here (PREFECT_SERVER_SERVICES_LATE_RUNS_AFTER_SECONDS,
default 15, on a 1 s loop, default 5) and the worker polls every 2 s (PREFECT_WORKER_QUERY_SECONDS, default 10):
with Prefect's defaults the same chain takes up to 15 + 5 + 10 = 30 s more than measured here (docs/operations/alerts.md)."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cli.deployments import pool_template
from prefect_adapters.forms import pool_choices
from specops.fleet.deployments import CPU_POOL, GPU_POOL, NO_WORKER_EVENT
from specops.fleet.pools import pool_description
from specops.host.processes import kill_process_tree
from tests.browser import flow_run_page_text, form_profile_choices, headless_chromium
from tests.integration.flows.test_prefect_deployment import commit_of_working_tree, host_without_checkout, read
from tests.integration.support import SHARED_CACHE, WebhookServer, prefect_server, service_env

pytestmark = [pytest.mark.integration, pytest.mark.slow]

BIN = Path(sys.executable).parent
LATE_AFTER_S, LATE_LOOP_S = 2, 1
BOUND_S = 60  # from the run's creation to the alert, at this test's settings (measured: 8 s)


def run(cmd: list[str], env: dict, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    done = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(cmd)}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def webhook():
    server = WebhookServer()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(scope="module")
def hook(webhook):
    return f"{webhook.base}/alerts"


@pytest.fixture(scope="module")
def server(tmp_path_factory, hook):
    tmp = tmp_path_factory.mktemp("no-worker")
    source = tmp / "source"
    source.mkdir()
    commit_of_working_tree(source)
    env = service_env(tmp, SPECOPS_WORKER_ARTIFACTS=str(tmp / "artifacts"), SPECOPS_WORKER_CACHE=str(SHARED_CACHE),
                      SPECOPS_WORKER_RESULTS_URL=f"sqlite:///{tmp / 'results.db'}",
                      SPECOPS_WORKER_ARTIFACTS_URL="http://127.0.0.1:9")
    env.pop("SPECOPS_DEPLOY_REPOSITORY", None)
    server_env = dict(env, PREFECT_SERVER_SERVICES_LATE_RUNS_AFTER_SECONDS=str(LATE_AFTER_S),
                      PREFECT_SERVER_SERVICES_LATE_RUNS_LOOP_SECONDS=str(LATE_LOOP_S))
    t0 = time.monotonic()
    with prefect_server(server_env, tmp / "prefect-server.log") as api:
        env["PREFECT_API_URL"] = api
        prefect = str(BIN / "prefect")

        async def create_pools(client):  # what the Makefile's deploy_recipe gives them (CLI: test_make_up_down.py)
            from prefect.client.schemas.actions import WorkPoolCreate

            for pool in (CPU_POOL, GPU_POOL):
                await client.create_work_pool(WorkPoolCreate(name=pool, type="process", description=pool_description(
                    pool), base_job_template=pool_template(pool)))

        read(api, create_pools)
        setup = run([str(BIN / "specops"), "alert", "setup"], dict(env, SPECOPS_ALERT_URL=hook), source)
        deployed = run([prefect, "--no-prompt", "deploy", "--name=no-worker-alert/notify",
                        "--name=specdec/eagle3-trtllm", "--name=specdec/ngram-local"], env, source)
        narrowed = run([str(BIN / "specops"), "deployments", "--narrow-forms"], env, source)
        assert "forms: 2 deployment(s)" in narrowed.stdout, narrowed.stdout
        assert "no-worker-alert/notify" in deployed.stdout and "specdec/eagle3-trtllm" in deployed.stdout
        print(f"server + pools + alert block + deploy: {time.monotonic() - t0:.0f}s")
        yield {"api": api, "env": env, "tmp": tmp, "source": source, "setup": setup}


def test_the_pools_say_how_to_serve_them(server):
    gpu = read(server["api"], lambda c: c.read_work_pool(GPU_POOL))
    assert "prefect worker start --pool specops-gpu --type process" in gpu.description
    assert "hf-token" in gpu.description
    # the base job template is still the one with the token's default
    assert "prefect.blocks.secret.hf-token" in json.dumps(gpu.base_job_template)


def test_alert_setup_saves_the_block_and_alert_test_reaches_the_webhook(server, webhook, hook):
    from prefect.blocks.webhook import Webhook
    from prefect.settings import PREFECT_API_URL, temporary_settings

    assert f"alert block webhook/specops-regression -> {hook}" in server["setup"].stdout
    with temporary_settings({PREFECT_API_URL: server["api"]}):
        assert Webhook.load("specops-regression").url.get_secret_value() == hook
    webhook.received.clear()
    t0 = time.monotonic()
    done = run([str(BIN / "specops"), "alert", "test"], server["env"], server["source"], timeout=120)
    print(f"specops alert test: {time.monotonic() - t0:.1f}s")
    assert f"test alert sent through webhook/specops-regression (on {server['api']}) to {hook}: HTTP 204" \
        in done.stdout, done.stdout
    (received,) = webhook.received
    assert received["path"] == "/alerts" and received["subject"] == "specops test alert"
    assert received["event"] == "test"

    missing = subprocess.run([str(BIN / "specops"), "alert", "test", "--block", "webhook/nobody-made-it"],
                             env=server["env"], cwd=server["source"], capture_output=True, text=True, timeout=120)
    assert missing.returncode == 4, missing.stderr
    assert "no block webhook/nobody-made-it" in missing.stderr and "specops alert setup" in missing.stderr
    assert "Traceback" not in missing.stderr


def test_a_gpu_run_with_no_gpu_worker_raises_the_event_and_the_alert(server, webhook):
    from prefect.deployments import run_deployment
    from prefect.settings import PREFECT_API_URL, temporary_settings

    api = server["api"]
    worker_env, empty = host_without_checkout(server["tmp"] / "cpu-worker", api)
    log = server["tmp"] / "cpu-worker.log"
    with log.open("w") as sink:  # `make up`'s worker; no GPU worker anywhere
        worker = subprocess.Popen([str(BIN / "prefect"), "worker", "start", "--pool", CPU_POOL, "--type", "process"],
                                  env=worker_env, cwd=empty, stdout=sink, stderr=subprocess.STDOUT,
                                  start_new_session=True)
    webhook.received.clear()
    try:
        t0 = time.monotonic()
        with temporary_settings({PREFECT_API_URL: api}):
            flow_run = run_deployment("specdec/eagle3-trtllm", timeout=0)
        late_at = None
        deadline = t0 + BOUND_S
        while not [h for h in webhook.received if h.get("event") == "no-worker"]:
            if late_at is None and read(api, lambda c: c.read_flow_run(flow_run.id)).state.name == "Late":
                late_at = time.monotonic()
            assert time.monotonic() < deadline and worker.poll() is None, \
                f"no alert within {BOUND_S}s (Late after {late_at and late_at - t0}s):\n{log.read_text()[-4000:]}"
            time.sleep(0.5)
        (alert,) = [h for h in webhook.received if h.get("event") == "no-worker"]
        took = alert["at"] - t0
        print(f"run created -> Late {late_at - t0:.1f}s -> alert {took:.1f}s (late after {LATE_AFTER_S}s, loop "
              f"{LATE_LOOP_S}s, worker polls every 2s)" if late_at else f"alert {took:.1f}s after the run's creation")
        assert alert["pool"] == GPU_POOL and alert["flow_run_id"] == str(flow_run.id)
        assert alert["deployment"] == "specdec/eagle3-trtllm" and alert["flow_run"] == flow_run.name
        assert alert["subject"] == (f"specops: no worker serves {GPU_POOL}: flow run {flow_run.name} ({flow_run.id}) "
                                    "of specdec/eagle3-trtllm is Late")
        assert "prefect worker start --pool specops-gpu --type process" in alert["text"]
        assert "hf-token" in alert["text"]

        async def no_worker_events(client):
            response = await client._client.post("/events/filter", json={
                "filter": {"event": {"name": [NO_WORKER_EVENT]}}, "limit": 10})
            response.raise_for_status()
            return response.json()["events"]

        deadline = time.monotonic() + 30  # the flow's events are sent as it ends
        while not (events := read(api, no_worker_events)):
            assert time.monotonic() < deadline, "no specops.pool.no-worker event"
            time.sleep(0.5)
        (event,) = events
        assert event["resource"]["prefect.resource.id"] == f"specops.pool.{GPU_POOL}"
        assert {"prefect.resource.id": f"prefect.flow-run.{flow_run.id}", "prefect.resource.role": "flow-run",
                "prefect.resource.name": flow_run.name} in event["related"]
        assert event["payload"]["worker_command"].endswith("prefect worker start --pool specops-gpu --type process")
        still = read(api, lambda c: c.read_flow_run(flow_run.id))
        assert still.state.name == "Late"  # nothing picked it up: the alert was not a false one
        # Where the run's user looks (issue 39): its own page, which opens on its Logs tab, names the missing
        # worker and the inbox; the same words are an artifact of the run.
        with headless_chromium() as driver:
            page = flow_run_page_text(driver, api.removesuffix("/api"), str(flow_run.id),
                                      f"no live worker serves the work pool {GPU_POOL}", timeout_s=60)
        assert "prefect worker start --pool specops-gpu --type process" in page, page
        assert "inbox: http://127.0.0.1:9/alerts" in page, page
        print(f"the Late run's page names the missing worker {time.monotonic() - t0:.0f}s after the run's creation")
        keys = read(api, lambda c: c.read_artifacts())
        assert f"no-worker-{GPU_POOL}" in {a.key for a in keys if str(a.flow_run_id) == str(flow_run.id)}
    finally:
        kill_process_tree(worker, timeout_s=60)



def test_each_pools_form_offers_the_profiles_its_workers_run(server):
    """The deployments' Custom run forms in headless Chromium, after `specops deployments --narrow-forms` (what
    `make up` runs after `prefect deploy`): the CPU pool's profile select holds no GPU profile, the GPU pool's no
    CPU one."""
    choices = pool_choices()
    api = server["api"]
    with headless_chromium() as driver:
        for name, pool in (("specdec/ngram-local", CPU_POOL), ("specdec/eagle3-trtllm", GPU_POOL)):
            deployment = read(api, lambda c, name=name: c.read_deployment_by_name(name))
            offered = form_profile_choices(driver, api.removesuffix("/api"), str(deployment.id))
            assert offered == choices[pool], (name, offered)
    assert not set(choices[CPU_POOL]) & set(choices[GPU_POOL])

    async def create(client, parameters: dict) -> str:
        from prefect.exceptions import PrefectHTTPStatusError

        deployment = await client.read_deployment_by_name("specdec/ngram-local")
        try:
            await client.create_flow_run_from_deployment(deployment.id, parameters=parameters)
        except PrefectHTTPStatusError as error:
            return f"{error.response.status_code} {error.response.json().get('detail')}"
        return "created"

    # A bad override is refused when the run is created (the UI's Run button posts the same), naming the field.
    answer = read(api, lambda c: create(c, {"profile": "ngram-local", "overrides": ["num_requests 4"]}))
    assert answer.startswith("409 ") and "field 'overrides[0]'" in answer, answer
    answer = read(api, lambda c: create(c, {"profile": "eagle3-trtllm"}))
    assert answer.startswith("409 ") and "field 'profile'" in answer, answer
