"""`specops plan` shows every step, command and rendered file without starting or fetching anything."""
from __future__ import annotations

import psutil

from specops.plan import format_plan
from specops.profile.loader import load_profile


def test_plan_lists_commands_and_files_without_side_effects(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECOPS_CACHE", str(tmp_path / "cache"))
    children_before = {p.pid for p in psutil.Process().children(recursive=True)}
    text = format_plan(load_profile("ngram-local", ["benchmark.num_requests=5"]))
    assert {p.pid for p in psutil.Process().children(recursive=True)} <= children_before
    assert not (tmp_path / "cache" / "embedded").exists()
    for needle in [
        "variant speculative (method ngram)", "variant base (method none)",
        "repository/speculative/config.pbtxt", 'string_value: "ngram"', "decoupled: true",
        "tritonserver --model-repository", "--http-address 127.0.0.1", "--exit-timeout-secs 5",
        "genai-perf profile -m speculative --endpoint-type kserve --backend vllm --streaming",
        "--request-count 5", "--concurrency 1",
    ]:
        assert needle in text, needle
    assert "--service-kind" not in text
