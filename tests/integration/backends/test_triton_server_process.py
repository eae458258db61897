"""A real tritonserver from the nvidia-pytriton wheel serving our Python-backend model.

The decoding engine here is the STAND-IN echo engine (standin_echo_engine.py), so these tests
exercise the Triton plumbing only; test_triton_embedded_engine.py runs the real engine.
"""
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psutil
import pytest

from specops.backends.triton_server import TritonServer, TritonStartError, sweep_stale_shm_regions
from specops.host import processes as proc
from specops.triton import client
from specops.triton.client import Endpoint
from specops.triton.model_config import python_generate_config
from specops.triton.repository import write_python_model

pytestmark = pytest.mark.integration

HERE = Path(__file__).resolve().parent
STANDIN = HERE / "standin_echo_engine.py"
STANDIN_ENGINE = "standin_echo_engine:StandinEchoEngine"


def render(repo: Path, name: str = "echo", **options) -> Path:
    config = python_generate_config(name, model_dir="/nonexistent", method="none", options=options, engine=STANDIN_ENGINE)
    return write_python_model(repo, config, extra_files=[STANDIN])


def processes_under(marker: Path) -> list[psutil.Process]:
    """tritonserver/stub processes whose command line names our tmp dir (other tests run their own)."""
    found = []
    for p in psutil.process_iter(["cmdline", "status"]):
        cmdline = " ".join(p.info["cmdline"] or [])
        if str(marker) in cmdline and p.info["status"] != psutil.STATUS_ZOMBIE and p.pid != os.getpid():
            if "tritonserver" in cmdline or "triton_python_backend_stub" in cmdline:
                found.append(p)
    return found


def long_request(endpoint) -> subprocess.Popen:
    """A client in its own process streaming a long generation (a genai-perf stand-in)."""
    code = (
        "from specops.triton import client; from specops.triton.client import Endpoint; "
        f"client.generate(Endpoint(**{endpoint.__dict__!r}), 'echo', 'x', max_tokens=500, timeout_s=600)"
    )
    busy = subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.DEVNULL)
    time.sleep(1.5)
    assert busy.poll() is None
    return busy


def http_generate(endpoint, model: str, payload: dict) -> dict:
    req = urllib.request.Request(
        f"http://{endpoint.http_url}/v2/models/{model}/generate",
        data=json.dumps(payload).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read())


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("triton-served")
    render(root / "repo")
    with TritonServer(root / "repo", root / "triton.log") as server:
        t0 = time.monotonic()
        endpoint = server.wait_ready(120)
        print(f"tritonserver ready in {time.monotonic() - t0:.1f}s: {endpoint}")
        # At once: tritonserver starts its metrics port after HTTP and gRPC, and ready includes it.
        served_metrics_at_ready.append(client.metrics_answer(endpoint))
        yield server, endpoint


served_metrics_at_ready: list[bool] = []


def test_ready_endpoint(served):
    assert served_metrics_at_ready == [True]
    server, endpoint = served
    assert endpoint.pid == server.pid and endpoint.host == "127.0.0.1"
    assert client.is_ready(endpoint, ["echo"])
    assert not client.is_ready(endpoint, ["no_such_model"])


def test_streamed_generate(served):
    _, endpoint = served
    assert client.generate(endpoint, "echo", "alpha beta", max_tokens=5) == " alpha beta alpha beta alpha"


def test_non_streamed_generate_prepends_prompt_like_vllm(served):
    _, endpoint = served
    out = http_generate(endpoint, "echo", {"text_input": "alpha beta", "sampling_parameters": '{"max_tokens": 3}'})
    assert out["text_output"] == "alpha beta alpha beta alpha"
    out = http_generate(endpoint, "echo", {"text_input": "x", "exclude_input_in_output": True})
    assert out["text_output"] == " x" * 16  # vLLM's default max_tokens


def test_request_errors_do_not_kill_the_model(served):
    _, endpoint = served
    with pytest.raises(client.GenerateError, match="stand-in engine was asked to fail"):
        client.generate(endpoint, "echo", "RAISE please", max_tokens=3)
    with pytest.raises(client.GenerateError, match="unsupported sampling parameters"):
        client.generate(endpoint, "echo", "x", max_tokens=3, presence_penalty=1.0)
    assert client.generate(endpoint, "echo", "still here", max_tokens=2) == " still here"


def test_metrics_visible(served):
    _, endpoint = served
    before = client.read_metrics(endpoint)
    client.generate(endpoint, "echo", "a b", max_tokens=4)
    after = client.read_metrics(endpoint, model="echo")
    assert after["spec_decode_num_drafts"] - before["spec_decode_num_drafts"] == 4
    assert after["spec_decode_num_draft_tokens"] - before["spec_decode_num_draft_tokens"] == 8
    assert after["spec_decode_num_emitted_tokens"] - before["spec_decode_num_emitted_tokens"] == 4
    assert client.accepted_per_position(after)[0] == after["spec_decode_num_accepted_tokens"]
    with urllib.request.urlopen(endpoint.metrics_url, timeout=5) as resp:
        text = resp.read().decode()
    assert 'spec_decode_num_accepted_tokens_per_pos{model="echo",position="0",version="1"}' in text


def test_stop_leaves_no_process_port_or_shm(tmp_path):
    render(tmp_path / "repo", delay_s=0.2)
    server = TritonServer(tmp_path / "repo", tmp_path / "triton.log").start()
    try:
        endpoint = server.wait_ready(120)
        assert client.generate(endpoint, "echo", "x", max_tokens=2) == " x x"
        tree = [psutil.Process(server.pid), *psutil.Process(server.pid).children(recursive=True)]
        assert any("triton_python_backend_stub" in p.name() for p in tree)
        # the stubs share tritonserver's process group (its own session)
        assert {os.getpgid(p.pid) for p in tree} == {server.pid} != os.getpgid(0)
        # a request in flight while stopping
        busy = long_request(endpoint)
    finally:
        t0 = time.monotonic()
        server.stop()
        stop_s = time.monotonic() - t0
    busy.wait(timeout=30)
    print(f"stopped in {stop_s:.1f}s with a request in flight")
    # tritonserver cannot unload a model with a decoupled request in flight: SIGKILL follows
    # its exit timeout
    assert stop_s < server.exit_timeout_s + 5
    assert not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in tree)
    assert processes_under(tmp_path) == []
    assert proc.wait_ports_free("127.0.0.1", [endpoint.http_port, endpoint.grpc_port, endpoint.metrics_port], 0) == []
    assert list(Path("/dev/shm").glob(f"{server._shm_prefix}*")) == []


def test_model_that_fails_to_load_surfaces_the_log_tail(tmp_path):
    render(tmp_path / "repo", name="broken", fail_load=True)
    t0 = time.monotonic()
    with pytest.raises(TritonStartError) as info:
        with TritonServer(tmp_path / "repo", tmp_path / "triton.log") as server:
            server.wait_ready(60)
    assert time.monotonic() - t0 < 30  # the exit is noticed, not the deadline
    message = str(info.value)
    assert "exited (exit code 1)" in message
    assert "stand-in engine refused to load" in message
    assert str(tmp_path / "triton.log") in message
    assert processes_under(tmp_path) == []


def test_port_clash_relaunches_on_new_ports(tmp_path, monkeypatch):
    import socket

    render(tmp_path / "repo")
    squatter = socket.socket()
    squatter.bind(("127.0.0.1", 0))
    squatter.listen()
    taken = squatter.getsockname()[1]
    real_pick = proc.pick_free_ports
    calls = []

    def pick_with_clash(host, count, avoid=()):
        ports = real_pick(host, count, avoid)
        calls.append(ports)
        if len(calls) == 1:
            ports[1] = taken  # the gRPC port is already in use
        return ports

    monkeypatch.setattr(proc, "pick_free_ports", pick_with_clash)
    try:
        with TritonServer(tmp_path / "repo", tmp_path / "triton.log") as server:
            endpoint = server.wait_ready(120)
            assert len(calls) == 2 and taken not in (endpoint.http_port, endpoint.grpc_port, endpoint.metrics_port)
            assert client.generate(endpoint, "echo", "ok", max_tokens=1) == " ok"
    finally:
        squatter.close()
    assert "already in use" in (tmp_path / "triton.log").read_text()


def test_sigkilled_parent_leaves_no_server_behind(tmp_path):
    render(tmp_path / "repo", delay_s=0.2)
    parent = subprocess.Popen(
        [sys.executable, str(HERE / "triton_parent_helper.py"), str(tmp_path / "repo"), str(tmp_path / "triton.log")],
        stdout=subprocess.PIPE, text=True,
    )
    busy = None
    try:
        info = json.loads(parent.stdout.readline())
        http, grpc, metrics = info["ports"]
        # a request in flight from a client that outlives the parent (as genai-perf would)
        busy = long_request(Endpoint("127.0.0.1", http, grpc, metrics))
    finally:
        parent.kill()  # SIGKILL: no cleanup code of ours runs
        parent.wait(timeout=10)
    assert parent.returncode == -signal.SIGKILL
    t0 = time.monotonic()
    while time.monotonic() - t0 < 20 and processes_under(tmp_path):
        time.sleep(0.2)
    gone_s = time.monotonic() - t0
    assert processes_under(tmp_path) == [], f"still running after {gone_s:.1f}s"
    assert not any(psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE
                   for p in [info["server"], *info["stubs"]])
    assert proc.wait_ports_free("127.0.0.1", info["ports"], 5) == []
    print(f"tritonserver and stubs gone {gone_s:.1f}s after the parent was SIGKILLed")
    busy.wait(timeout=30)
    assert busy.returncode != 0  # its stream broke
    leftover = f"specops{parent.pid}_*"  # shm regions the SIGKILLed server left; the next start sweeps them
    sweep_stale_shm_regions()
    assert list(Path("/dev/shm").glob(leftover)) == []


def test_files_specops_writes_at_the_repository_root_are_ignored_by_triton(tmp_path):
    """Container backends write their sidecar (mounts) and the tritonserver wrapper beside the model
    directories; the real server loads the repository with them there (model-control-mode none: it
    loads every model directory it finds)."""
    from specops.backends.container.backend import write_files
    from specops.backends.container.placement import SIDECAR, sidecar
    from specops.backends.trtllm.triton_launch import loopback_wrapper

    repo = tmp_path / "repo"
    render(repo)
    write_files(repo, {SIDECAR: sidecar([("/host/model", "/hf-models/model")]), **loopback_wrapper("127.0.0.1")})
    with TritonServer(repo, tmp_path / "triton.log") as server:
        endpoint = server.wait_ready(120)
        assert client.is_ready(endpoint, ["echo"])
        assert client.generate(endpoint, "echo", "hello", max_tokens=4)
    log = (tmp_path / "triton.log").read_text()
    assert SIDECAR not in log and "specops-tritonserver" not in log
