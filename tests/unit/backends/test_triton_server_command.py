"""tritonserver command line and environment, without starting it."""
import os
import sys
from pathlib import Path

from specops.backends.triton_server import TritonServer
from specops.triton.backend_dir import triton_dist


def _server(tmp_path, **kw):
    (tmp_path / "repo" / "m1").mkdir(parents=True)
    (tmp_path / "repo" / "m1" / "config.pbtxt").write_text('name: "m1"')
    (tmp_path / "repo" / "not_a_model").mkdir()
    server = TritonServer(tmp_path / "repo", tmp_path / "run" / "triton.log", **kw)
    server._dist, server._ports = triton_dist(), (8100, 8101, 8102)
    return server


def test_models_default_to_the_repository(tmp_path):
    assert _server(tmp_path).models == ["m1"]


def test_command_line(tmp_path):
    cmd = _server(tmp_path, host="0.0.0.0").command()
    assert cmd[0] == str(triton_dist().binary)
    args = dict(zip(cmd[1::2], cmd[2::2]))
    assert args["--model-repository"] == str((tmp_path / "repo").resolve())
    assert args["--backend-directory"] == str((tmp_path / "run" / "triton-backends").resolve())
    assert (args["--http-address"], args["--http-port"]) == ("0.0.0.0", "8100")
    assert (args["--grpc-address"], args["--grpc-port"]) == ("0.0.0.0", "8101")
    assert (args["--metrics-address"], args["--metrics-port"]) == ("0.0.0.0", "8102")
    assert args["--exit-timeout-secs"] == "5" and args["--log-verbose"] == "0"
    assert args["--backend-config"].startswith("python,shm-region-prefix-name=specops")


def test_endpoint_dials_loopback_for_wildcard_bind(tmp_path):
    ep = _server(tmp_path, host="0.0.0.0").endpoint
    assert ep.grpc_url == "127.0.0.1:8101" and ep.metrics_url == "http://127.0.0.1:8102/metrics"


def test_interpreter_directory_leads_path(tmp_path):
    env = _server(tmp_path).environment()
    assert env["PATH"].split(os.pathsep)[0] == os.path.dirname(sys.executable)
    assert (Path(env["PATH"].split(os.pathsep)[0]) / "python3").exists()


def test_describe_command_for_plans(tmp_path):
    cmd = TritonServer.describe_command(tmp_path / "repo", host="0.0.0.0", exit_timeout_s=7)
    args = dict(zip(cmd[1::2], cmd[2::2]))
    assert args["--grpc-port"] == "<grpc-port>" and args["--grpc-address"] == "0.0.0.0"
    assert args["--exit-timeout-secs"] == "7"
    assert not (tmp_path / "repo").exists()  # describing touches nothing


def test_server_environment_never_carries_download_credentials(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_TOKEN", "hf_secret_value")
    monkeypatch.setenv("HUGGING_FACE_HUB_TOKEN", "hf_other_secret")
    env = TritonServer(tmp_path, tmp_path / "log").environment()
    assert "hf_secret_value" not in env.values() and "hf_other_secret" not in env.values()
