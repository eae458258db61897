"""`specops plan` shows every step, command and rendered file without starting or fetching anything."""
from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time

import psutil
import pytest

from specops.backends import needs_gpu
from specops.pipeline.plan import format_plan
from specops.profile.loader import list_profile_names, load_profile


def test_plan_lists_commands_and_files_without_side_effects(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECOPS_CACHE", str(tmp_path / "cache"))
    children_before = {p.pid for p in psutil.Process().children(recursive=True)}
    text = format_plan(load_profile("ngram-local", ["benchmark.num_requests=5", "benchmark.tool=genai-perf"]))
    assert {p.pid for p in psutil.Process().children(recursive=True)} <= children_before
    assert not (tmp_path / "cache" / "embedded").exists()
    for needle in [
        "variant speculative (method ngram)", "variant base (method none)",
        "repository/speculative/config.pbtxt", 'string_value: "ngram"', "decoupled: true",
        "tritonserver --model-repository", "--http-address 127.0.0.1", "--exit-timeout-secs 5",
        "genai-perf profile -m speculative --endpoint-type kserve --backend vllm --streaming",
        "--request-count 5", "--concurrency 1", "report.md, comparison.csv, comparison.png, manifest.json",
    ]:
        assert needle in text, needle
    assert "--service-kind" not in text
    assert "round blocks, not requests interleaved: genai-perf drives one server per run" in text


def test_plan_shows_one_interleaved_run_for_both_variants_where_the_tool_can(monkeypatch, tmp_path):
    monkeypatch.setenv("SPECOPS_CACHE", str(tmp_path / "cache"))
    text = format_plan(load_profile("ngram-local", ["benchmark.num_requests=5", "benchmark.tool=aiperf"]))
    [command] = [line for line in text.splitlines() if "aiperf profile" in line]
    words = shlex.split(command.split("$ ", 1)[1])
    urls = [words[i + 1] for i, word in enumerate(words) if word == "--url"]
    assert [u.rsplit("/", 1)[-1] for u in urls] == ["speculative", "base"]
    assert "--request-count 10" in command and "--export-level raw" in command  # 5 prompts on each server
    assert "one run for both variants, requests interleaved" in text
    assert "in the speculative variant's interleaved run (above)" in text


@pytest.mark.parametrize("name", list_profile_names())
def test_every_shipped_profile_plans_without_gpu_or_docker(name, tmp_path, monkeypatch):
    monkeypatch.setenv("SPECOPS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-docker.sock")
    text = format_plan(load_profile(name))
    assert "variant speculative" in text and "variant base (method none)" in text
    # a CPU profile's tool is AIPerf, its requests interleaved; a GPU profile's genai-perf
    tool = load_profile(name).profile.benchmark.tool
    assert {"aiperf": " profile -m ", "genai-perf": "genai-perf profile"}[tool] in text and "--service-kind" not in text
    if needs_gpu(load_profile(name).profile.backend):
        assert tool == "genai-perf"
    else:
        assert tool == "aiperf" and "interleaved run" in text, name  # every CPU profile's headline has an interval


def test_gpu_profile_run_stops_at_once_naming_what_is_missing(tmp_path):
    """No Docker daemon here (DOCKER_HOST points at nothing): refused before Prefect or any download."""
    env = dict(os.environ, SPECOPS_CACHE=str(tmp_path / "cache"), SPECOPS_ARTIFACTS=str(tmp_path / "artifacts"),
               DOCKER_HOST=f"unix://{tmp_path}/no-docker.sock")
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "cli", "run", "eagle3-trtllm"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 4, proc.stderr
    assert "eagle3-trtllm cannot run on this machine" in proc.stderr and "Docker" in proc.stderr
    assert time.monotonic() - start < 60
    assert not (tmp_path / "cache").exists() and not (tmp_path / "artifacts").exists()


@pytest.mark.parametrize("name", [n for n in list_profile_names() if needs_gpu(load_profile(n).profile.backend)])
def test_every_gpu_profile_plan_names_its_version_and_acceptance_source(name):
    text = format_plan(load_profile(name))
    section = text.split("== variant speculative", 1)[1].split("== variant base", 1)[0]
    version = section.split("[version]\n", 1)[1].splitlines()[0]
    assert " ships " in version and "rendered for that version" in version
    acceptance = section.split("[acceptance]\n", 1)[1].splitlines()[0].removeprefix("  $ ")
    named = any(s in acceptance for s in ("return_perf_metrics", "Speculative metrics", "/metrics"))
    assert named or acceptance.startswith("unavailable on "), acceptance
    kind = load_profile(name).profile.backend.kind
    docker = [line for line in section.splitlines() if "docker run" in line]
    assert docker and all(f"--label specops.backend={kind} " in line for line in docker)
