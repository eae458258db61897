"""A real Prefect server, `prefect deploy --all` from prefect.yaml, and the ngram-local deployment
run to completion by a process worker (`--run-once`), as `make up` + `prefect deployment run` do."""
from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.integration.support import REPO_ROOT, port_free, processes_mentioning, service_env

pytestmark = [pytest.mark.integration, pytest.mark.slow]

BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(url: str, server: subprocess.Popen, timeout_s: float = 180) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert server.poll() is None, "prefect server exited"
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(1)
    raise TimeoutError("prefect server not healthy")


@pytest.fixture(scope="module")
def prefect_server(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("prefect")
    port = free_port()
    api = f"http://127.0.0.1:{port}/api"
    env = service_env(tmp_path, PREFECT_API_URL=api)
    log = (tmp_path / "prefect-server.log").open("w")
    server = subprocess.Popen([str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port)],
                              env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_healthy(api, server)
        for pool in ("specops-cpu", "specops-gpu"):
            prefect(env, "work-pool", "create", pool, "--type", "process")
        deployed = prefect(env, "--no-prompt", "deploy", "--all")
        assert "specdec/ngram-local" in deployed.stdout
        yield api, env
    finally:
        server.terminate()
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


def prefect(env, *args, timeout=300) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(BIN / "prefect"), *args], env=env, cwd=REPO_ROOT, capture_output=True, text=True,
                          timeout=timeout)
    assert proc.returncode == 0, f"prefect {' '.join(args)}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def test_deployment_runs_through_process_worker(prefect_server, embedded_model):
    api, env = prefect_server
    artifacts = Path(env["SPECOPS_ARTIFACTS"])

    from prefect.client.orchestration import get_client
    from prefect.deployments import run_deployment
    from prefect.settings import PREFECT_API_URL, temporary_settings

    overrides = ["benchmark.num_requests=2", "benchmark.warmup_requests=0", "benchmark.output_tokens=16",
                 "comparison.lossless_prompts=2", "comparison.lossless_max_tokens=16"]
    with temporary_settings({PREFECT_API_URL: api}):
        flow_run = run_deployment("specdec/ngram-local", parameters={"overrides": overrides, "run_id": "via-worker"},
                                  timeout=0)
        worker = subprocess.run([str(BIN / "prefect"), "worker", "start", "--pool", "specops-cpu", "--type",
                                 "process", "--run-once"], env=env, cwd=artifacts.parent, capture_output=True, text=True,
                                timeout=1200)

        async def final_state():
            async with get_client() as client:
                return (await client.read_flow_run(flow_run.id)).state

        state = asyncio.run(final_state())
    assert state.is_completed(), f"{state}\n{worker.stdout[-4000:]}\n{worker.stderr[-4000:]}"
    run_dir = artifacts / "ngram-local" / "via-worker"
    assert (run_dir / "report.md").is_file() and (run_dir / "comparison.csv").is_file()
    assert "**VALID**" in (run_dir / "report.md").read_text()


def test_cancelling_during_benchmark_leaves_nothing_behind(prefect_server, embedded_model):
    """Cancel from the API while genai-perf runs: the worker stops the flow run, and no server,
    stub or benchmark process nor bound port survives (finally + on_cancellation + pdeathsig)."""
    import json
    import signal

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.objects import StateType
    from prefect.deployments import run_deployment
    from prefect.settings import PREFECT_API_URL, temporary_settings
    from prefect.states import Cancelling

    api, env = prefect_server
    run_dir = Path(env["SPECOPS_ARTIFACTS"]) / "ngram-local" / "to-cancel"
    overrides = ["benchmark.num_requests=200", "comparison.lossless_prompts=1", "comparison.lossless_max_tokens=8"]
    worker_env = dict(env, PREFECT_WORKER_QUERY_SECONDS="2", PREFECT_RUNNER_POLL_FREQUENCY="2")
    with temporary_settings({PREFECT_API_URL: api}):
        flow_run = run_deployment("specdec/ngram-local", parameters={"overrides": overrides, "run_id": "to-cancel"},
                                  timeout=0)
        log = (run_dir.parent.parent / "cancel-worker.log")
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("w") as sink:
            worker = subprocess.Popen([str(BIN / "prefect"), "worker", "start", "--pool", "specops-cpu", "--type",
                                       "process"], env=worker_env, cwd=REPO_ROOT, stdout=sink,
                                      stderr=subprocess.STDOUT, start_new_session=True)
        try:
            deadline = time.monotonic() + 600
            while not (run_dir / "logs" / "bench-speculative-round0.log").exists():
                assert time.monotonic() < deadline and worker.poll() is None, log.read_text()[-3000:]
                time.sleep(1)
            time.sleep(8)
            record = json.loads((run_dir / "servers" / "speculative.json").read_text())
            assert processes_mentioning(str(run_dir))

            async def cancel_and_wait():
                async with get_client() as client:
                    await client.set_flow_run_state(flow_run.id, Cancelling(), force=True)
                    for _ in range(120):
                        state = (await client.read_flow_run(flow_run.id)).state
                        if state.type == StateType.CANCELLED:
                            return state
                        await asyncio.sleep(1)
                    return state

            state = asyncio.run(cancel_and_wait())
        finally:
            os.killpg(worker.pid, signal.SIGTERM)
            try:
                worker.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(worker.pid, signal.SIGKILL)
                worker.wait()
    assert state.type == StateType.CANCELLED, f"{state}\n{log.read_text()[-3000:]}"
    deadline = time.monotonic() + 30
    while processes_mentioning(str(run_dir)) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert processes_mentioning(str(run_dir)) == []
    for port in record["ports"]:
        assert port_free("127.0.0.1", port), f"port {port} still bound"
