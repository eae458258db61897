"""Triton's own vLLM backend on this CPU (backend vllm, launch: process): the tritonserver of nvidia-pytriton runs
triton-inference-server/vllm_backend's src/ (../shared/reference/vllm_backend, main 8de0c14, given as a local
checkout: this machine cannot reach GitHub) with the real vLLM CPU engine, no stand-ins:

- `specops run ngram-vllm-cpu`, shrunk: VALID; acceptance unavailable, with the reason (this backend exports
  no speculative-decoding series at this commit);
- a server that does not stop on SIGTERM (tritonserver waits for an in-flight request past its exit timeout)
  is still gone, every process of it, within the teardown bound.
"""
from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

import httpx
import psutil
import pytest

from specops.backends.base import Deployment, make_backend
from specops.backends.vllm import cpu as vllm_cpu
from specops.host.processes import running
from specops.profile.loader import load_profile
from specops.run.variant import BASE, Variant, base_method
from specops.triton import client
from tests.integration.support import REPO_ROOT, service_env
from tests.reference import REFERENCE

pytestmark = [pytest.mark.integration, pytest.mark.slow]

CODE = f"backend.backend_code={REFERENCE / 'vllm_backend'}"
SHRINK = ["benchmark.num_requests=3", "benchmark.output_tokens=24", "comparison.lossless_prompts=2",
          "comparison.lossless_max_tokens=24", CODE]


@pytest.fixture(scope="module", autouse=True)
def _vllm_installed():
    problems = vllm_cpu.preflight()
    if problems:
        pytest.fail("the vLLM CPU engine is not installed (`make install`):\n" + "\n".join(problems))


def test_triton_vllm_backend_runs_ngram_valid_and_says_why_acceptance_is_unavailable(embedded_model, tmp_path):
    env = service_env(tmp_path)
    args = ["run", "ngram-vllm-cpu", "--run-id", "triton"]
    for item in SHRINK:
        args += ["--set", item]
    proc = subprocess.run([sys.executable, "-m", "cli", *args], cwd=REPO_ROOT, env=env, capture_output=True,
                          text=True, timeout=1500)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    run = tmp_path / "artifacts" / "ngram-vllm-cpu" / "triton"
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["status"] == "ok" and manifest["verdict"] == "VALID"
    spec = next(v for v in manifest["variants"] if v["name"] == "speculative")
    assert spec["metrics"]["request_count"] == 3 and spec["metrics"]["output_sequence_length_avg"] == 24
    acc = spec["acceptance"]
    assert acc["available"] is False
    assert "exports no speculative-decoding series" in acc["source"] and "8de0c148bda1" in acc["source"]
    assert "exports no speculative-decoding series" in (run / "report.md").read_text()
    # Triton's vllm_backend really served it: its model.py under our backend directory, the engine in the stub.
    log = (run / "logs" / "server-speculative.log").read_text()
    assert "Initializing a V1 LLM engine (v0.32.0)" in log and "method='ngram'" in log


def _tree(pid: int) -> list[psutil.Process]:
    root = psutil.Process(pid)
    return [root, *root.children(recursive=True)]


def test_a_server_that_ignores_sigterm_is_gone_within_the_teardown_bound(embedded_model, tmp_path, caplog):
    p = load_profile("ngram-vllm-cpu", [CODE]).profile
    backend = make_backend(p.backend, Deployment(p.name, p.serving, p.target.source))
    variant = Variant(BASE, base_method())
    repo = tmp_path / "repo"
    backend.render(variant, embedded_model, None, repo)
    server = backend.launch(variant, repo, tmp_path / "server.log")
    tree = _tree(server.pid)
    assert any("triton_python_b" in proc.name() for proc in tree), [proc.name() for proc in tree]
    # A long request in flight: tritonserver then waits for it (up to --exit-timeout-secs 30) on SIGTERM.
    # In flight means its first token came back, not a fixed wait that a busy host outlasts.
    first_token = threading.Event()
    streaming = threading.Thread(target=lambda: _quietly(lambda: _stream(server.endpoint, variant.model_name,
                                                                         first_token)), daemon=True)
    streaming.start()
    assert first_token.wait(timeout=120), "the long request never produced a token"
    bound = 3.0
    t0 = time.monotonic()
    with caplog.at_level("WARNING", logger="specops.host.processes"):
        server.stop(bound)
    elapsed = time.monotonic() - t0
    assert "ignored SIGTERM" in caplog.text  # it really did not stop on SIGTERM
    assert [proc for proc in tree if running(proc)] == []
    # SIGTERM, `bound` s, SIGKILL to the group, then stragglers reaped and ports checked (specops.host.processes).
    assert elapsed < bound + 20, elapsed
    print(f"stopped in {elapsed:.1f}s ({len(tree)} processes, bound {bound}s)")


def _stream(endpoint, model: str, first_token: threading.Event) -> None:
    """A 2000-token generation over Triton's HTTP generate_stream; sets first_token at its first event."""
    body = client.generate_inputs("def quicksort(arr):", 2000, temperature=0.0, ignore_eos=True)
    with httpx.Client(trust_env=False, timeout=120) as http, http.stream(
            "POST", f"{endpoint.http_base}/v2/models/{model}/generate_stream", json=body) as response:
        for line in response.iter_lines():
            if line.startswith("data:"):
                first_token.set()


def _quietly(call) -> None:
    try:
        call()
    except Exception:  # the server is killed under it: that is the point
        pass
