"""genai-perf adapter: command line, request inputs, tool environment, preflight, bounded run."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from specops.bench import genai_perf, tool_process, toolchain
from specops.bench.genai_perf import GenaiPerfError, GenaiPerfRequest, GenaiPerfTimeout, build_command

VENV_BIN = Path(sys.executable).parent


def _req(tmp_path: Path, **overrides) -> GenaiPerfRequest:
    fields = dict(
        model="eagle_model",
        url="127.0.0.1:8001",
        input_file=tmp_path / "in.jsonl",
        tokenizer=tmp_path / "tok",
        artifact_dir=tmp_path / "art",
    )
    return GenaiPerfRequest(**(fields | overrides))


def _flag(cmd: list[str], name: str) -> str:
    return cmd[cmd.index(name) + 1]


# --- command line ------------------------------------------------------------------------------
def test_default_command_is_the_current_cli(tmp_path):
    cmd = build_command(_req(tmp_path, request_count=20, warmup_request_count=2, output_tokens=64))
    assert Path(cmd[0]).name == "genai-perf" and cmd[1] == "profile"
    assert "--service-kind" not in cmd  # dropped upstream
    assert _flag(cmd, "-m") == "eagle_model"
    assert _flag(cmd, "--endpoint-type") == "kserve"
    assert _flag(cmd, "--backend") == "vllm"
    assert "--streaming" in cmd
    assert _flag(cmd, "--url") == "127.0.0.1:8001"
    assert _flag(cmd, "--tokenizer") == str(tmp_path / "tok")
    assert _flag(cmd, "--concurrency") == "1"
    assert _flag(cmd, "--input-file") == str(tmp_path / "in.jsonl")
    assert _flag(cmd, "--artifact-dir") == str(tmp_path / "art")
    assert _flag(cmd, "--request-count") == "20"
    assert _flag(cmd, "--warmup-request-count") == "2"
    assert _flag(cmd, "--random-seed") == "0"
    assert _flag(cmd, "--output-tokens-mean") == "64"
    assert _flag(cmd, "--output-tokens-stddev") == "0"
    assert "--output-tokens-mean-deterministic" in cmd


def test_vllm_sampling_parameters_fix_the_output_length(tmp_path):
    cmd = build_command(_req(tmp_path, output_tokens=64))
    extra = json.loads(_flag(cmd, "--extra-inputs"))
    # One tensor, a JSON string, as the vLLM backend reads it (genai-perf would put every other
    # extra input in a tensor of its own, which the model would reject).
    assert set(extra) == {"sampling_parameters"}
    assert json.loads(extra["sampling_parameters"]) == {
        "max_tokens": 64, "min_tokens": 64, "ignore_eos": True, "temperature": 0.0,
    }  # fmt: skip


def test_optional_flags_are_left_out(tmp_path):
    cmd = build_command(_req(tmp_path, streaming=False, output_tokens=None, temperature=None))
    for flag in ("--streaming", "--request-count", "--warmup-request-count", "--output-tokens-mean",
                 "--output-tokens-mean-deterministic", "--extra-inputs"):
        assert flag not in cmd


def test_ignore_eos_off_keeps_only_max_tokens(tmp_path):
    req = _req(tmp_path, output_tokens=32, ignore_eos=False, temperature=None)
    cmd = build_command(req)
    assert "--output-tokens-mean-deterministic" not in cmd
    assert json.loads(json.loads(_flag(cmd, "--extra-inputs"))["sampling_parameters"]) == {"max_tokens": 32}


def test_tensorrtllm_uses_genai_perfs_own_length_tensors(tmp_path):
    cmd = build_command(_req(tmp_path, backend="tensorrtllm", output_tokens=64))
    assert _flag(cmd, "--backend") == "tensorrtllm"
    assert "--output-tokens-mean-deterministic" in cmd  # -> max_tokens + min_length tensors
    assert "--extra-inputs" not in cmd


def test_openai_endpoints_take_sampling_keys_directly(tmp_path):
    cmd = build_command(_req(tmp_path, endpoint_type="completions", backend=None, output_tokens=64))
    assert _flag(cmd, "--endpoint-type") == "completions"
    assert "--backend" not in cmd
    assert json.loads(_flag(cmd, "--extra-inputs")) == {"ignore_eos": True, "min_tokens": 64, "temperature": 0.0}
    # genai-perf 0.0.16 refuses the deterministic flag outside Triton service kinds
    # (ConfigCommand._check_output_tokens_and_service_kind): the OpenAI payload pins the length itself.
    assert "--output-tokens-mean-deterministic" not in cmd


def test_user_extra_inputs_win(tmp_path):
    cmd = build_command(_req(tmp_path, extra_inputs={"sampling_parameters": '{"max_tokens": 5}'}))
    assert json.loads(_flag(cmd, "--extra-inputs")) == {"sampling_parameters": '{"max_tokens": 5}'}


def test_every_flag_we_emit_exists_in_the_installed_genai_perf(tmp_path):
    help_text = subprocess.run(
        [toolchain.genai_perf_executable(), "profile", "--help"], capture_output=True, text=True, timeout=120
    ).stdout
    cmd = build_command(_req(tmp_path, request_count=3, warmup_request_count=1, output_tokens=8))
    flags = {arg for arg in cmd[2:] if arg.startswith("-")}
    assert flags and all(flag in help_text for flag in flags), flags - {f for f in flags if f in help_text}
    assert "--service-kind" not in help_text


# --- environment and preflight -----------------------------------------------------------------
def test_tool_env_drops_secrets_and_sets_paths():
    base = {"PATH": "/usr/bin:/bin", "HF_TOKEN": "hf_secret", "HUGGING_FACE_HUB_TOKEN": "x",
            "LD_LIBRARY_PATH": "/opt/lib", "KEEP": "me"}  # fmt: skip
    env = toolchain.tool_env(base)
    assert "HF_TOKEN" not in env and "HUGGING_FACE_HUB_TOKEN" not in env
    assert env["KEEP"] == "me"
    assert env["PATH"].split(os.pathsep)[0] == str(toolchain.scripts_dir())
    assert env["PATH"].endswith("/usr/bin:/bin")
    cudart = toolchain.cudart_lib_dir()
    assert cudart is not None and (cudart / "libcudart.so.12").exists()
    assert env["LD_LIBRARY_PATH"].split(os.pathsep) == [str(cudart), "/opt/lib"]
    assert env["HF_HUB_OFFLINE"] == "1" and env["TRANSFORMERS_OFFLINE"] == "1"
    assert base["HF_TOKEN"] == "hf_secret"  # the caller's mapping is not touched


def test_tool_env_leaves_parent_process_alone(monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_secret")
    monkeypatch.delenv("LD_LIBRARY_PATH", raising=False)
    env = toolchain.tool_env()
    assert "HF_TOKEN" not in env and os.environ["HF_TOKEN"] == "hf_secret"
    assert "LD_LIBRARY_PATH" not in os.environ and env["LD_LIBRARY_PATH"]


def test_preflight_passes_on_this_machine():
    assert genai_perf.preflight() == []


def test_preflight_names_each_missing_library_with_its_fix(monkeypatch):
    ldd_output = (
        "\tlinux-vdso.so.1 (0x00007ffd)\n"
        "\tlibb64.so.0d => not found\n"
        "\tlibcudart.so.12 => not found\n"
        "\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f)\n"
    )
    monkeypatch.setattr(toolchain, "_capture", lambda cmd, env: (0, ldd_output))
    problems = toolchain.preflight()
    assert len(problems) == 2
    assert problems[0].startswith("libb64.so.0d not found") and "apt-get install -y libb64-0d" in problems[0]
    assert problems[1].startswith("libcudart.so.12 not found") and "nvidia-cuda-runtime-cu12" in problems[1]


def test_preflight_reports_missing_perf_analyzer(monkeypatch):
    monkeypatch.setattr(toolchain, "scripts_dir", lambda: Path("/nonexistent"))
    problems = toolchain.preflight({"PATH": "/nonexistent-too"})
    assert any("perf_analyzer not found" in p and "tritonclient[all]==2.51.0" in p for p in problems)
    assert any("genai-perf not found" in p for p in problems)


# --- bounded run (a stand-in command instead of genai-perf) --------------------------------------
def _fake(monkeypatch, script: str) -> None:
    monkeypatch.setattr(genai_perf, "build_command", lambda req: ["bash", "-c", script])


def _group_gone(marker: str) -> bool:
    return not [p for p in psutil.process_iter(["cmdline"]) if marker in " ".join(p.info["cmdline"] or [])]


def test_run_streams_output_to_log_and_callback(tmp_path, monkeypatch):
    _fake(monkeypatch, 'echo "line one"; echo "HF_TOKEN=${HF_TOKEN:-unset}" >&2')
    monkeypatch.setenv("HF_TOKEN", "hf_secret")
    seen: list[str] = []
    out = genai_perf.run(_req(tmp_path), tmp_path / "logs" / "gp.log", timeout_s=30, on_line=seen.append)
    assert out == tmp_path / "art" and out.is_dir()
    assert seen == ["line one", "HF_TOKEN=unset"]
    assert (tmp_path / "logs" / "gp.log").read_text().splitlines()[1:] == seen


def test_run_raises_with_log_tail_on_failure(tmp_path, monkeypatch):
    _fake(monkeypatch, "echo 'genai-perf: boom'; exit 3")
    with pytest.raises(GenaiPerfError, match=r"exited 3(.|\n)*genai-perf: boom"):
        genai_perf.run(_req(tmp_path), tmp_path / "gp.log", timeout_s=30)


def test_run_timeout_kills_the_whole_group(tmp_path, monkeypatch):
    marker = f"sleep 41.{os.getpid()}"  # unique, and over by itself if a kill fails
    # A child that ignores SIGTERM: only the SIGKILL escalation ends it.
    _fake(monkeypatch, f"trap '' TERM; {marker} & {marker}; wait")
    monkeypatch.setattr(tool_process, "KILL_GRACE_S", 1.0)
    t0 = time.monotonic()
    with pytest.raises(GenaiPerfTimeout, match="exceeded 1s"):
        genai_perf.run(_req(tmp_path), tmp_path / "gp.log", timeout_s=1)
    assert time.monotonic() - t0 < 15
    deadline = time.monotonic() + 5
    while not _group_gone(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _group_gone(marker)


def test_run_keyboard_interrupt_kills_the_group_and_propagates(tmp_path, monkeypatch, sigint_interrupts):
    marker = f"sleep 42.{os.getpid()}"
    _fake(monkeypatch, f"{marker} & echo started; {marker}; wait")

    def interrupt_once_started(line: str) -> None:  # the tool runs, with a child: Ctrl-C now
        if line == "started":
            os.kill(os.getpid(), signal.SIGINT)

    with pytest.raises(KeyboardInterrupt):
        genai_perf.run(_req(tmp_path), tmp_path / "gp.log", timeout_s=60, on_line=interrupt_once_started)
    deadline = time.monotonic() + 10
    while not _group_gone(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _group_gone(marker)


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"endpoint_type": "openai"}, "endpoint_type 'openai'"),
        ({"backend": None}, "kserve needs one of"),
        ({"concurrency": 0}, "concurrency must be >= 1"),
        ({"request_count": 0}, "request_count must be >= 1"),
        ({"output_tokens": 0}, "output_tokens must be >= 1"),
        ({"warmup_request_count": -1}, "warmup_request_count must be >= 0"),
    ],
)
def test_request_rejects_settings_genai_perf_would_choke_on(tmp_path, overrides, message):
    with pytest.raises(ValueError, match=message):
        _req(tmp_path, **overrides)
