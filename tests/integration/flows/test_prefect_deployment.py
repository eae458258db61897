"""A real Prefect server, `prefect deploy --all` from prefect.yaml, and the ngram-local deployment
run to completion by a process worker (`--run-once`), as `make up` + `prefect deployment run` do."""
from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.integration.support import REPO_ROOT, service_env

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


@pytest.fixture
def prefect_server(tmp_path):
    port = free_port()
    api = f"http://127.0.0.1:{port}/api"
    env = service_env(tmp_path, PREFECT_API_URL=api)
    log = (tmp_path / "prefect-server.log").open("w")
    server = subprocess.Popen([str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port)],
                              env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_healthy(api, server)
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


def test_deployment_runs_through_process_worker(prefect_server, embedded_model, tmp_path):
    api, env = prefect_server
    prefect(env, "work-pool", "create", "specops-cpu", "--type", "process")
    deployed = prefect(env, "--no-prompt", "deploy", "--all")
    assert "specdec/ngram-local" in deployed.stdout

    from prefect.client.orchestration import get_client
    from prefect.deployments import run_deployment
    from prefect.settings import PREFECT_API_URL, temporary_settings

    overrides = ["benchmark.num_requests=2", "benchmark.warmup_requests=0", "benchmark.output_tokens=16",
                 "comparison.lossless_prompts=2", "comparison.lossless_max_tokens=16"]
    with temporary_settings({PREFECT_API_URL: api}):
        flow_run = run_deployment("specdec/ngram-local", parameters={"overrides": overrides, "run_id": "via-worker"},
                                  timeout=0)
        worker = subprocess.run([str(BIN / "prefect"), "worker", "start", "--pool", "specops-cpu", "--type",
                                 "process", "--run-once"], env=env, cwd=tmp_path, capture_output=True, text=True,
                                timeout=1200)

        async def final_state():
            async with get_client() as client:
                return (await client.read_flow_run(flow_run.id)).state

        state = asyncio.run(final_state())
    assert state.is_completed(), f"{state}\n{worker.stdout[-4000:]}\n{worker.stderr[-4000:]}"
    run_dir = tmp_path / "artifacts" / "ngram-local" / "via-worker"
    assert (run_dir / "report.md").is_file() and (run_dir / "comparison.csv").is_file()
    assert "**VALID**" in (run_dir / "report.md").read_text()
