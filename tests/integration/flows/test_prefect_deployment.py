"""Two hosts on one machine: a Prefect server on a real PostgreSQL, the deployments of the generated
prefect.yaml pinned to a commit of this checkout (a temporary repository holding the working tree as one
commit, so the test neither needs nor touches a clean tree), and a process worker started in an empty
directory under another HOME, with no checkout and no SPECOPS_* settings of its own: the pull steps
clone the commit and check the worker's Python, the job variables say where the run's files and results
go, and the flow imports the clone's code (the RunResult records the temporary commit, not /work/main's).

ngram-local is deployed as a GPU deployment would be (`--pool specops-gpu --concurrency-limit 1
--collision-strategy ENQUEUE`, the settings prefect.yaml gives every GPU profile, and `serving.exclusive`,
which GPU profiles hold their GPUs' slots with): two runs queued on it never overlap their serve-to-teardown
windows, and the second says what it waits for.

The regression flow, run here on ngram-local until it has a baseline and then twice with a setting that
lowers acceptance, says `suspicious` and then `regression`, ends Failed, and the automation `prefect deploy`
registered from prefect.yaml runs the alert deployment on a CPU-pool worker, which calls a webhook served by
the test.

Also: a GPU deployment's limit and job variables as stored, the HF token resolved by the worker from the
Secret block (never stored in the deployment, nor in anything a run writes), a missing block's error, the
run's progress artifacts and specops' own log lines in the flow run, and a cancelled run leaving nothing
behind."""
from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from cli.deployments import pool_template
from specops.fleet.deployments import ALERT_BLOCK, CPU_POOL, GPU_CONCURRENCY, GPU_POOL, NIGHTLY
from specops.host.processes import kill_process_tree
from specops.regression.suite import EVENT
from specops.results.store import ResultsStore
from tests.integration.postgres import create_database
from tests.integration.support import (
    REPO_ROOT,
    SHARED_CACHE,
    port_free,
    prefect_server,
    processes_mentioning,
    run_regression_flow,
    service_env,
)
from tests.results_factory import insert_future_rows

pytestmark = [pytest.mark.integration, pytest.mark.slow]
# Deployments whose forms test_sweep_compare_and_calibrate_forms_as_the_server_stores_them reads back.
FORMS = ("sweep/ngram-local", "compare/smollm2-135m-local", "calibrate/ngram-local")

BIN = Path(sys.executable).parent
TOKEN = "hf_test_token_not_a_real_one"


def run(cmd: list[str], env: dict, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{' '.join(cmd)}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def commit_of_working_tree(dest: Path) -> str:
    """A repository whose one commit is this checkout's working tree (tracked and new files, as they are)."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO_ROOT, check=True,
                            capture_output=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        src = REPO_ROOT / rel
        if src.is_file():  # a tracked file deleted in the working tree is left out, as a commit would
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    git = ["git", "-c", "user.name=specops-test", "-c", "user.email=test@specops.invalid"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "the working tree, deployed by a test"]):
        subprocess.run([*git, *args], cwd=dest, check=True, capture_output=True)
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=dest, check=True, capture_output=True,
                          text=True).stdout.strip()


@pytest.fixture(scope="module")
def deployed(tmp_path_factory, postgres_server):
    tmp = tmp_path_factory.mktemp("two-hosts")
    source = tmp / "source"
    source.mkdir()
    commit = commit_of_working_tree(source)
    prefect_db = create_database(postgres_server).replace("postgresql+psycopg://", "postgresql+asyncpg://")
    results_url = create_database(postgres_server)
    env = service_env(tmp, SPECOPS_WORKER_ARTIFACTS=str(tmp / "artifacts"),
                      SPECOPS_WORKER_CACHE=str(SHARED_CACHE), SPECOPS_WORKER_RESULTS_URL=results_url)
    env.pop("SPECOPS_DEPLOY_REPOSITORY", None)  # the default: this checkout's path (it has no origin)
    t0 = time.monotonic()
    # A run refused by the deployment's limit is retried after 2 s, not the default 30.
    server_env = dict(env, PREFECT_API_DATABASE_CONNECTION_URL=prefect_db,
                      PREFECT_SERVER_DEPLOYMENTS_CONCURRENCY_SLOT_WAIT_SECONDS="2")
    with prefect_server(server_env, tmp / "prefect-server.log") as api:
        env["PREFECT_API_URL"] = api
        print(f"Prefect server on PostgreSQL healthy after {time.monotonic() - t0:.0f}s")
        for pool in ("specops-cpu", "specops-gpu"):  # as `make deploy` creates them
            template = tmp / f"{pool}.json"
            template.write_text(json.dumps(pool_template(pool)))
            run([str(BIN / "prefect"), "work-pool", "create", pool, "--type", "process", "--base-job-template",
                 str(template)], env, source)
        # the two deployments the tests run, not all of them (CI time); Prefect's own model of prefect.yaml
        # takes the whole file in tests/unit/test_prefect_yaml.py. The embedded profile goes to the GPU pool
        # with a GPU deployment's limit (GPU_CONCURRENCY), so a worker of that pool can run it here.
        gpu = ["--pool", GPU_POOL, "--concurrency-limit", str(GPU_CONCURRENCY["limit"]),
               "--collision-strategy", GPU_CONCURRENCY["collision_strategy"]]
        # one `prefect deploy` per set of options (each pays the CLI's start and the build steps once)
        for names, options in ((["specdec/ngram-local"], gpu),
                               (["specdec/eagle3-trtllm", "regression/nightly", "regression-alert/notify",
                                 *FORMS], [])):
            deployed = run([str(BIN / "prefect"), "--no-prompt", "deploy", *(f"--name={n}" for n in names),
                            *options], env, source)
            assert all(name in deployed.stdout for name in names), deployed.stdout
        print(f"server on PostgreSQL + pools + deploy: {time.monotonic() - t0:.0f}s")
        yield {"api": api, "env": env, "commit": commit, "source": source, "results_url": results_url,
               "artifacts": tmp / "artifacts", "tmp": tmp}

def host_without_checkout(where: Path, api: str) -> tuple[dict[str, str], Path]:
    """A worker's environment as on another host: its own HOME, no SPECOPS_/PREFECT_ settings but the API,
    and an empty working directory (returned) with no checkout."""
    home, empty = where / "home", where / "cwd"
    home.mkdir(parents=True)
    empty.mkdir()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SPECOPS_", "PREFECT_", "VIRTUAL_ENV", "PYTHONPATH", "HF_"))}
    env.update(HOME=str(home), PREFECT_API_URL=api, PREFECT_SERVER_ANALYTICS_ENABLED="false",
               PREFECT_LOGGING_LEVEL="INFO", PREFECT_WORKER_QUERY_SECONDS="2",
               PATH=os.pathsep.join([str(BIN), os.environ.get("PATH", "")]))
    return env, empty


def read(api: str, coro_fn):
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    async def go():
        async with get_client() as client:
            return await coro_fn(client)

    with temporary_settings({PREFECT_API_URL: api}):
        return asyncio.run(go())


def test_gpu_deployment_waits_for_its_gpu_and_gets_the_token_from_the_worker(deployed):
    from prefect.blocks.system import Secret
    from prefect.client.schemas.objects import ConcurrencyLimitStrategy
    from prefect.exceptions import ObjectNotFound
    from prefect.settings import PREFECT_API_URL, temporary_settings
    from prefect.workers.process import ProcessJobConfiguration

    api, env = deployed["api"], deployed["env"]
    deployment = read(api, lambda c: c.read_deployment_by_name("specdec/eagle3-trtllm"))
    # 3.8.8 stores a deployment's limit as a global concurrency limit (DeploymentResponse.concurrency_limit
    # is always None, kept for old clients)
    assert deployment.work_pool_name == "specops-gpu" and deployment.global_concurrency_limit.limit == 1
    assert deployment.concurrency_options.collision_strategy == ConcurrencyLimitStrategy.ENQUEUE
    # The artifacts URL is optional: this deployer has no artifacts server, so `prefect deploy` stored "", which
    # the worker's settings read as unset (its runs link files by file://).
    assert deployment.job_variables["env"] == {"SPECOPS_CACHE": str(SHARED_CACHE),
                                               "SPECOPS_ARTIFACTS": str(deployed["artifacts"]),
                                               "SPECOPS_RESULTS_URL": deployed["results_url"],
                                               "SPECOPS_ARTIFACTS_URL": ""}

    async def resolve(client):
        """What a worker of the GPU pool builds for a run of this deployment (no GPU needed)."""
        pool = await client.read_work_pool("specops-gpu")
        flow_run = await client.create_flow_run_from_deployment(deployment.id)
        try:
            return await ProcessJobConfiguration.resolve_for_flow_run(
                flow_run, client=client, work_pool=pool, worker_name="test", deployment=deployment)
        except ObjectNotFound as err:
            return err
        finally:
            await client.delete_flow_run(flow_run.id)

    missing = read(api, resolve)
    assert isinstance(missing, ObjectNotFound) and "Block not found: 'hf-token' of type 'secret'" in str(missing)

    with temporary_settings({PREFECT_API_URL: api}):
        Secret(value=TOKEN).save("hf-token")
    config = read(api, resolve)
    assert config.env["HF_TOKEN"] == TOKEN and config.env["SPECOPS_ARTIFACTS"] == env["SPECOPS_WORKER_ARTIFACTS"]
    stored = read(api, lambda c: c.read_deployment_by_name("specdec/eagle3-trtllm"))
    assert TOKEN not in stored.model_dump_json() and TOKEN not in (config.command or "")


def test_sweep_compare_and_calibrate_forms_as_the_server_stores_them(deployed):
    """The UI's form is the stored parameter_openapi_schema: the profile a choice of the shipped profiles, every
    field described, the grid's bounds; the server refuses a run outside it (enforce_parameter_schema) and
    takes one inside it. No worker: the runs made here are deleted before one could pick them up."""
    from prefect.exceptions import PrefectHTTPStatusError

    from specops.profile.loader import list_profile_names

    api, t0 = deployed["api"], time.monotonic()
    stored = {name: read(api, lambda c, name=name: c.read_deployment_by_name(name)) for name in FORMS}
    sweep, compare, calibrate = (stored[name] for name in FORMS)
    for d in stored.values():
        assert d.work_pool_name == CPU_POOL and d.enforce_parameter_schema and "specops" in d.tags
        props = d.parameter_openapi_schema["properties"]
        assert all(len(p.get("description", "")) > 20 for p in props.values()), d.name
        assert "key=value" in props["overrides"]["description"]
        assert props["overrides"]["examples"] == [["benchmark.num_requests=8"]]
    shipped = list_profile_names()
    assert sweep.parameter_openapi_schema["properties"]["profile"]["enum"] == shipped
    assert calibrate.parameter_openapi_schema["properties"]["profile"]["enum"] == shipped
    assert compare.parameter_openapi_schema["properties"]["profiles"]["items"]["enum"] == shipped
    assert sweep.parameters == {"profile": "ngram-local"} and sweep.tags == ["specops", "sweep"]
    assert "ngram-local" in compare.parameters["profiles"] and len(compare.parameters["profiles"]) >= 2
    k = sweep.parameter_openapi_schema["properties"]["draft_lengths"]
    assert (k["items"]["minimum"], k["items"]["maximum"], k["uniqueItems"]) == (1, 64, True)

    async def start(client, deployment, parameters):
        try:
            run = await client.create_flow_run_from_deployment(deployment.id, parameters=parameters)
        except PrefectHTTPStatusError as refused:
            return refused.response.status_code, refused.response.text
        await client.delete_flow_run(run.id)
        return 201, run.parameters

    path = str(deployed["source"] / "profiles" / "ngram-local.yaml")
    for deployment, parameters in ((sweep, {"profile": path}), (sweep, {"draft_lengths": [0]}),
                                   (compare, {"profiles": ["ngram-local"]}), (calibrate, {"runs": 1000})):
        status, text = read(api, lambda c, d=deployment, p=parameters: start(c, d, p))
        assert status == 409 and "Validation failed" in text, (deployment.name, parameters, status, text)
    status, parameters = read(api, lambda c: start(c, sweep, {"profile": "eagle-local", "concurrencies": [1, 8]}))
    assert status == 201 and parameters == {"profile": "eagle-local", "concurrencies": [1, 8]}
    print(f"forms read back and checked in {time.monotonic() - t0:.1f}s")


def test_a_worker_without_checkout_runs_the_deployed_commit_one_run_at_a_time(deployed, embedded_model):
    """Runs after the GPU deployment test, which saves the pool's Secret block (a GPU-pool worker needs it)."""
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId, LogFilter, LogFilterFlowRunId
    from prefect.deployments import run_deployment
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from specops.results.store import ResultsStore

    tmp, api = deployed["tmp"], deployed["api"]
    worker_env, empty = host_without_checkout(tmp / "worker", api)
    overrides = ["benchmark.num_requests=2", "benchmark.warmup_requests=0", "benchmark.output_tokens=16",
                 "comparison.lossless_prompts=1", "comparison.lossless_max_tokens=8", "serving.exclusive=true"]
    run_ids = ("via-worker", "queued-behind")
    t0 = time.monotonic()
    # The queued run serves its speculative variant alone (UNCHECKED: no baseline), enough for its window.
    runs_overrides = {"via-worker": overrides, "queued-behind": [*overrides, "comparison.baseline=false"]}
    with temporary_settings({PREFECT_API_URL: api}):
        flow_runs = {run_id: run_deployment("specdec/ngram-local", timeout=0,
                                            parameters={"overrides": runs_overrides[run_id], "run_id": run_id})
                     for run_id in run_ids}
    log = tmp / "gpu-pool-worker.log"
    seen: dict[str, list[tuple[str, str | None]]] = {run_id: [] for run_id in run_ids}
    with log.open("w") as sink:
        worker = subprocess.Popen([str(BIN / "prefect"), "worker", "start", "--pool", GPU_POOL, "--type", "process"],
                                  env=worker_env, cwd=empty, stdout=sink, stderr=subprocess.STDOUT,
                                  start_new_session=True)
    try:
        deadline = time.monotonic() + 1200
        while True:
            states = {run_id: read(api, lambda c, i=flow_run.id: c.read_flow_run(i)).state
                      for run_id, flow_run in flow_runs.items()}
            for run_id, state in states.items():
                if not seen[run_id] or seen[run_id][-1] != (state.name, state.message):
                    seen[run_id].append((state.name, state.message))
            if all(state.is_final() for state in states.values()):
                break
            assert time.monotonic() < deadline and worker.poll() is None, f"{seen}\n{log.read_text()[-4000:]}"
            time.sleep(0.5)
    finally:
        kill_process_tree(worker, timeout_s=60)
    print(f"two deployment runs through one GPU-pool worker: {time.monotonic() - t0:.0f}s; states seen: {seen}")
    output = log.read_text()
    assert all(state.is_completed() for state in states.values()), f"{seen}\n{output[-4000:]}"
    assert output.count("nothing to install") == 2, output[-4000:]  # each run's pull step found the pins met
    # One run at a time: the other waited, in the state the UI shows for a deployment's full limit
    # (prefect/server/orchestration/core_policy.py SecureFlowConcurrencySlots).
    assert any(name == "AwaitingConcurrencySlot" for names in seen.values() for name, _ in names), seen

    deployment = read(api, lambda c: c.read_deployment_by_name("specdec/ngram-local"))
    clone = deployment.pull_steps[0]["prefect.deployments.steps.git_clone"]
    assert clone["commit_sha"] == deployed["commit"] and clone["repository"] == str(deployed["source"])

    with ResultsStore.open(deployed["results_url"]) as store:
        results = {run_id: store.get(run_id) for run_id in run_ids}
    assert results["via-worker"].verdict.value == "VALID" and results["queued-behind"].verdict.value == "UNCHECKED"
    for result in results.values():
        assert result.status.value == "ok"
        # the flow ran the clone's code: the commit specops records is the temporary one, not /work/main's HEAD
        assert result.software.git_commit == deployed["commit"] and result.software.git_dirty is False
        assert Path(result.run_dir) == deployed["artifacts"] / "ngram-local" / result.run_id
        assert (Path(result.run_dir) / "report.md").is_file()
        files = [f for f in Path(result.run_dir).rglob("*") if f.is_file()]
        assert files and not [f for f in files if TOKEN.encode() in f.read_bytes()]  # the worker's HF_TOKEN
    first, second = sorted((r.window for r in results.values()), key=lambda w: w.started_at)
    assert first.finished_at <= second.started_at, (first, second)
    print(f"serve-to-teardown windows: {first} then {second}")

    run_id = flow_runs["via-worker"].id
    artifacts = read(api, lambda c: c.read_artifacts(
        artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[run_id]))))
    progress = [a for a in artifacts if a.type == "progress"]
    assert progress and all(a.data == 100.0 for a in progress), [(a.type, a.data, a.description) for a in artifacts]
    assert any(a.description.startswith("benchmark of ") for a in progress), [a.description for a in progress]
    # create_link_artifact stores a markdown link in 3.8.8 (prefect/artifacts.py LinkArtifact.format)
    link = [a.data for a in artifacts if a.key == "ngram-local-run-dir"]
    assert link == [f"[{socket.gethostname()}:{results['via-worker'].run_dir}]"
                    f"({Path(results['via-worker'].run_dir).as_uri()})"], [(a.key, a.data) for a in artifacts]
    logs = read(api, lambda c: c.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[run_id]))))
    assert any(entry.name.startswith("specops.") for entry in logs), sorted({entry.name for entry in logs})
    assert not [entry for entry in logs if TOKEN in entry.message]


def test_cancelling_during_benchmark_leaves_nothing_behind(deployed, embedded_model):
    """Cancel from the API while genai-perf runs: the worker stops the flow run, and no server,
    stub or benchmark process nor bound port survives (finally + on_cancellation + pdeathsig)."""
    from prefect.client.schemas.objects import StateType
    from prefect.deployments import run_deployment
    from prefect.settings import PREFECT_API_URL, temporary_settings
    from prefect.states import Cancelling

    api, env = deployed["api"], deployed["env"]
    run_dir = deployed["artifacts"] / "ngram-local" / "to-cancel"
    # the speculative variant alone (no baseline): its benchmark starts without a whole base benchmark first
    overrides = ["benchmark.num_requests=200", "comparison.baseline=false", "benchmark.tool=genai-perf"]  # waits for it
    worker_env = dict(env, PREFECT_WORKER_QUERY_SECONDS="2", PREFECT_RUNNER_POLL_FREQUENCY="2")
    with temporary_settings({PREFECT_API_URL: api}):
        flow_run = run_deployment("specdec/ngram-local", parameters={"overrides": overrides, "run_id": "to-cancel"},
                                  timeout=0)
    log = deployed["tmp"] / "cancel-worker.log"
    with log.open("w") as sink:
        worker = subprocess.Popen([str(BIN / "prefect"), "worker", "start", "--pool", GPU_POOL, "--type",
                                   "process"], env=worker_env, cwd=deployed["tmp"], stdout=sink,
                                  stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 600
        while not (run_dir / "logs" / "bench-speculative-round0.log").exists():
            assert time.monotonic() < deadline and worker.poll() is None, log.read_text()[-3000:]
            time.sleep(1)
        time.sleep(8)
        record = json.loads((run_dir / "servers" / "speculative.json").read_text())
        assert processes_mentioning(str(run_dir))

        async def cancel_and_wait(client):
            await client.set_flow_run_state(flow_run.id, Cancelling(), force=True)
            for _ in range(120):
                state = (await client.read_flow_run(flow_run.id)).state
                if state.type == StateType.CANCELLED:
                    return state
                await asyncio.sleep(1)
            return state

        state = read(api, cancel_and_wait)
    finally:
        kill_process_tree(worker, timeout_s=60)
    assert state.type == StateType.CANCELLED, f"{state}\n{log.read_text()[-3000:]}"
    deadline = time.monotonic() + 30
    while processes_mentioning(str(run_dir)) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert processes_mentioning(str(run_dir)) == []
    for port in record["ports"]:
        assert port_free("127.0.0.1", port), f"port {port} still bound"
    # Recorded as interrupted, not failed (issue 51): the regression rules never judge it nor count it in a
    # streak of failures. The worker's SIGTERM ends the flow run the way `make down` does.
    status = json.loads((run_dir / "status.json").read_text())
    with ResultsStore.open(deployed["results_url"]) as store:
        row = store.get("to-cancel")
    assert (status["state"], row.status.value) == ("interrupted", "interrupted"), (status, row.reasons,
                                                                                   log.read_text()[-3000:])


class _Hook(BaseHTTPRequestHandler):
    received: list[dict] = []

    def do_POST(self):  # noqa: N802 (http.server's name)
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        _Hook.received.append(json.loads(body or b"{}"))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


def test_regression_suspicious_then_regression_fails_and_the_automation_calls_the_webhook(
        deployed, embedded_model, tmp_path):
    from prefect.blocks.webhook import Webhook
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterDeploymentId
    from prefect.settings import PREFECT_API_URL, temporary_settings

    api = deployed["api"]
    # Registered by `prefect deploy` from prefect.yaml: the nightly cron schedule and the automation.
    nightly = read(api, lambda c: c.read_deployment_by_name("regression/nightly"))
    notify = read(api, lambda c: c.read_deployment_by_name("regression-alert/notify"))
    schedules = read(api, lambda c: c.read_deployment_schedules(nightly.id))
    assert [(s.schedule.cron, s.schedule.timezone, s.active) for s in schedules] == [
        (NIGHTLY["cron"], NIGHTLY["timezone"], True)]
    assert {"profile": "ngram-local"} in nightly.parameters["suite"] and nightly.work_pool_name == CPU_POOL
    automations = read(api, lambda c: c.read_automations_by_name("specops-regression-detected"))
    assert len(automations) == 1, automations
    automation = automations[0]
    assert automation.enabled and automation.trigger.expect == {EVENT}
    assert [(a.type, a.deployment_id) for a in automation.actions] == [("run-deployment", notify.id)]

    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _Hook.received.clear()
    with temporary_settings({PREFECT_API_URL: api}):
        Webhook(url=f"http://127.0.0.1:{server.server_port}/specops").save(ALERT_BLOCK.split("/")[1], overwrite=True)
    worker_env, empty = host_without_checkout(tmp_path / "worker", api)
    log = tmp_path / "cpu-pool-worker.log"
    with log.open("w") as sink:
        worker = subprocess.Popen([str(BIN / "prefect"), "worker", "start", "--pool", CPU_POOL, "--type", "process"],
                                  env=worker_env, cwd=empty, stdout=sink, stderr=subprocess.STDOUT,
                                  start_new_session=True)
    # This test's own history: runs of other tests (other settings) must not form its baseline.
    env = dict(os.environ, PREFECT_API_URL=api, SPECOPS_RESULTS_URL=f"sqlite:///{tmp_path / 'results.db'}",
               SPECOPS_ARTIFACTS=str(tmp_path / "artifacts"), SPECOPS_CACHE=str(SHARED_CACHE),
               PREFECT_SERVER_ANALYTICS_ENABLED="false")
    # The speculative variant alone (CI time): acceptance needs no base. 48 tokens, as ngram-local asks:
    # at 16 prompt lookup has too little output to match in (acceptance length ~1.3 at any K).
    # A fixed draft length: the adaptive one picks K from measured draft and verification costs, so on a
    # loaded host (CI's other xdist worker) it drafted ~1 token at K=4 and the baseline looked like K=1.
    shrink = ["benchmark.num_requests=2", "benchmark.output_tokens=48", "benchmark.warmup_requests=0",
              "comparison.baseline=false", "backend.draft_length=fixed"]
    # K=1 caps a verification step at 2 tokens, against ~2.4 at ngram-local's K=4: a change of setting that
    # really lowers acceptance. Throughput metrics get loose thresholds: two shared CPU cores make them
    # noisier than 5%, and this test is about the rule's sequence, shown on a metric that is not.
    policy = {"min_baseline_runs": 1, "baseline_runs": 3, "thresholds": {
        "mean_acceptance_length": 0.9, "speedup": 0.3, "output_tokens_per_s": 0.3, "itl_p50_ms": 3.0,
        "acceptance_rate_pos": 0.3}}
    # Rows a newer specops wrote into the shared database (one readable in part, one not), dated after
    # every run here so that no verdict depends on them: the flow must read past them, not stop.
    with ResultsStore.open(env["SPECOPS_RESULTS_URL"]) as store:
        insert_future_rows(store, started_at=time.time() + 10 * 365 * 86400)
    verdicts, failed = {}, {}
    t0 = time.monotonic()
    try:
        # Each flow in its own process, as a worker runs it: Prefect's log and event senders then end with
        # it, not at pytest's exit against a server this module has stopped by then.
        for name, extra in (("baseline", []), ("degraded-1", ["method.num_speculative_tokens=1"]),
                            ("degraded-2", ["method.num_speculative_tokens=1"])):
            suite = [{"profile": "ngram-local", "overrides": shrink + extra}]
            outcome = run_regression_flow(suite, policy, env, timeout=600)
            verdicts[name], failed[name] = outcome["verdicts"], outcome["failed"]
        print(f"three regression flow runs: {time.monotonic() - t0:.0f}s; verdicts {verdicts}")
        assert set(verdicts["baseline"].values()) == {"insufficient-data"}, verdicts
        assert verdicts["degraded-1"]["mean_acceptance_length"] == "suspicious", verdicts
        assert "regression" not in verdicts["degraded-1"].values(), verdicts
        assert verdicts["degraded-2"]["mean_acceptance_length"] == "regression", verdicts
        assert failed == {"baseline": False, "degraded-1": False, "degraded-2": True}  # RegressionFound raised
        flow_runs = read(api, lambda c: c.read_flow_runs())
        regression_runs = sorted((r for r in flow_runs if r.flow_id == nightly.flow_id), key=lambda r: r.created)
        assert [r.state.type.value for r in regression_runs][-3:] == ["COMPLETED", "COMPLETED", "FAILED"]
        assert "mean_acceptance_length" in regression_runs[-1].state.message
        deadline = time.monotonic() + 240
        while not any(h.get("metric") == "mean_acceptance_length" for h in _Hook.received):
            assert time.monotonic() < deadline and worker.poll() is None, log.read_text()[-4000:]
            time.sleep(1)
        print(f"webhook called {time.monotonic() - t0:.0f}s after the first run began: {_Hook.received}")
        hook = next(h for h in _Hook.received if h.get("metric") == "mean_acceptance_length")
        assert hook["profile"] == "ngram-local" and hook["value"] < hook["baseline"] and len(hook["runs"]) == 2
        alert_runs = read(api, lambda c: c.read_flow_runs(flow_run_filter=FlowRunFilter(
            deployment_id=FlowRunFilterDeploymentId(any_=[notify.id]))))
        assert alert_runs and all(r.state.is_completed() for r in alert_runs if r.state.is_final())
    finally:
        kill_process_tree(worker, timeout_s=60)
        server.shutdown()


@pytest.mark.parametrize(("parameters", "said"), [
    ({"profile": "nope"}, "invalid profile\n  nope: no such profile file or name; known profiles: "),
    # issue 51: named the CLI's --set and the checkout's (on a worker, a temporary clone's) path, with a traceback
    ({"profile": "ngram-local", "overrides": ["benchmark.num_requests=-3"]},
     "invalid profile\n  profiles/ngram-local.yaml (with overrides benchmark.num_requests=-3): benchmark.num_requests: "),
], ids=["no-profile", "override-out-of-range"])
def test_a_profile_that_does_not_load_fails_the_run_in_one_line_without_a_traceback(deployed, parameters, said):
    """A flow run of specdec that cannot load its profile (a deployment's form offers the shipped ones and checks the
    overrides, a Python caller or an old deployment may pass anything), run as a worker runs it (`python -m
    prefect.engine`): Failed with the message naming what the run was given, one ERROR line, and no traceback (the
    engine's own line for a failed run says it was refused: prefect_adapters/refusal.py)."""
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId

    from flows.specdec import specdec

    api, env = deployed["api"], deployed["env"]
    flow_run = read(api, lambda c: c.create_flow_run(specdec, parameters=parameters))
    t0 = time.monotonic()
    engine = subprocess.run([sys.executable, "-m", "prefect.engine"], cwd=REPO_ROOT, capture_output=True, text=True,
                            env=dict(env, PREFECT__FLOW_RUN_ID=str(flow_run.id),
                                     PREFECT__FLOW_ENTRYPOINT="flows/specdec.py:specdec"), timeout=300)
    print(f"engine: {time.monotonic() - t0:.1f}s, exit {engine.returncode}")
    state = read(api, lambda c: c.read_flow_run(flow_run.id)).state
    assert state.is_failed() and said.split("\n  ", 1)[1] in state.message, state.message
    assert "--set" not in state.message and str(REPO_ROOT) not in state.message, state.message
    time.sleep(2)  # the engine's last log batch
    logs = read(api, lambda c: c.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[flow_run.id]))))
    errors = [log.message for log in logs if log.level >= 40]
    assert len(errors) == 1 and errors[0].startswith(said), errors
    assert not [log.message for log in logs if "Traceback" in log.message], [log.message for log in logs]
