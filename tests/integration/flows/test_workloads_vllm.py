"""The answer per category on the engine users deploy: `specops run ngram-vllm-serve-cpu` over three of Spec-Bench's
categories (the shared reference copy: a copy known by its checksum), vLLM's CPU build, shrunk by overrides. No
stand-ins:

- the questions go through the chat endpoint (the server applies SmolLM2's chat template), the lossless check and
  the replay render them the same way: the replay predicts each category's accepted tokens per step as vLLM's
  per-request counts measured them;
- the report gives each category's speedup with its interval and its acceptance beside the prediction;
- the run keeps its answers as a traffic log, and `specops replay --traffic` over the base's recorded greedy answers
  predicts what the generated replay predicts for the same tokens, and what the engine counted.
"""
from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest

from specops.profile.loader import load_profile
from specops.replay import run as replay
from specops.results.model import RunResult
from tests.integration.support import REPO_ROOT, SHARED_CACHE, service_env
from tests.reference import REFERENCE

pytestmark = [pytest.mark.integration, pytest.mark.slow]

CATEGORIES = ["qa", "rag", "translation"]
SPEC_BENCH = REFERENCE / "spec_bench" / "question.jsonl"
# 2 prompts of each category x 64 tokens: a request's last step, whose drafts past the end the engine counts and a
# log cannot, is then a small share of its steps
SETS = [f"benchmark.prompts={SPEC_BENCH}", f"benchmark.categories=[{', '.join(CATEGORIES)}]",
        "benchmark.per_category=2", "benchmark.output_tokens=64", "benchmark.warmup_requests=0",
        "comparison.lossless_prompts=2", "comparison.lossless_max_tokens=32"]


def specops(env, *args: str, timeout: float = 1500) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cli", *args], cwd=REPO_ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture(scope="module")
def categories_run(embedded_model, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("workloads")
    env = service_env(tmp)
    args = ["run", "ngram-vllm-serve-cpu", "--run-id", "cats"] + [a for s in SETS for a in ("--set", s)]
    proc = specops(env, *args)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run_dir = tmp / "artifacts" / "ngram-vllm-serve-cpu" / "cats"
    return env, run_dir, RunResult.model_validate_json((run_dir / "manifest.json").read_text()), proc


def test_each_category_has_its_speedup_interval_and_acceptance_beside_the_prediction(categories_run):
    _, run_dir, result, proc = categories_run
    w = result.workload
    assert w.api == "chat" and "spec-bench (hemingkx/Spec-Bench@fd2c1cd" in w.label and w.seed == 0
    assert result.benchmark.api == "openai/chat" and result.verdict.value == "VALID"
    assert [f.category for f in w.categories] == CATEGORIES and all(f.prompts == 2 for f in w.categories)
    for f in w.categories:
        print(f"{f.category}: {f.speedup.text()}; accepted/step measured {f.accepted_per_step:.3f}, predicted "
              f"{f.predicted_accepted_per_step:.3f}")
        assert f.speedup.has_interval and f.speedup.low < f.speedup.point < f.speedup.high, f
        assert abs(f.accepted_per_step - f.predicted_accepted_per_step) <= 0.1, f  # replay vs vLLM's own counts
    overall = result.speedup
    assert overall.has_interval and "stratified by its 3 categories" in overall.resampled
    report = (run_dir / "report.md").read_text()
    assert "over 3 categories, weighted equally" in report
    for f in w.categories:
        assert f"| {f.category} | 2 | 33% | {f.speedup.point:.2f}x ({f.speedup.low:.2f}-{f.speedup.high:.2f}) |" \
            in report
    rows = pd.read_csv(run_dir / "comparison.csv")
    assert sorted(rows["category"].dropna()) == CATEGORIES
    assert "per category: qa " in proc.stdout


def test_the_runs_answers_replayed_as_traffic_predict_what_the_generated_replay_and_the_engine_say(
        categories_run, monkeypatch):
    env, run_dir, result, _ = categories_run
    base, spec = (run_dir / "answers" / "base.jsonl"), (run_dir / "answers" / "speculative.jsonl")
    lines = [json.loads(line) for line in base.read_text().splitlines()]
    assert len(lines) == 6 and {line["category"] for line in lines} == set(CATEGORIES)
    assert lines[0]["messages"][-1]["role"] == "assistant" and lines[0]["messages"][0]["role"] == "user"
    assert spec.read_text() == base.read_text()  # temperature 0: every measured answer identical on both servers
    out = run_dir.parent / "traffic.json"
    replayed = specops(env, "replay", "ngram-vllm-serve-cpu", "--grid", "profile", "--traffic", str(base),
                       "--json", str(out), timeout=600)
    assert replayed.returncode == 0, replayed.stderr[-3000:]
    (traffic,) = json.loads(out.read_text())
    # The generated replay of the same prompts, its drafts past each request's end not counted, as a log's are
    monkeypatch.setattr(replay, "cache_root", lambda: SHARED_CACHE)
    loaded = load_profile("ngram-vllm-serve-cpu", SETS)
    (generated,) = replay.predict(loaded, [replay.profile_setting(loaded)], lambda line: None, past_end=False)
    assert abs(traffic["per_drafted_step"] - generated.per_drafted_step) <= 0.01, (traffic, generated)
    for category, value in traffic["by_category"].items():
        assert abs(value - generated.by_category[category]) <= 0.01, category
    counted = result.variant("speculative").acceptance.mean_accepted_per_step
    print(f"accepted/step: traffic replay {traffic['per_drafted_step']:.4f}, generated replay (drafts past the end "
          f"not counted) {generated.per_drafted_step:.4f}, with them {result.predicted.accepted_per_step:.4f}, vLLM "
          f"counted {counted:.4f}; by category {traffic['by_category']} vs {generated.by_category}")
    assert abs(traffic["per_drafted_step"] - counted) <= 0.1, (traffic["per_drafted_step"], counted)
