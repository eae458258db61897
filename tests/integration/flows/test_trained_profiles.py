"""Trained-draft profiles end to end with `specops run`, shrunk by overrides: data is synthesized by the served
target, the draft trained with ModelOpt (or distilled), served, checked lossless on HumanEval prompts and
benchmarked; and the EAGLE-3 head specops trains deploys in real vLLM.

Three runs on one cache, which starts empty of data and drafts (only the converted embedded model is shared):
- eagle3-local: heads on the target. It synthesizes the data set and trains the head (ModelOpt, exported with
  export_speculative_decoding), then serves it in the embedded runtime at a fixed draft length;
- draft-target-local: a draft model of its own, trained on the same data set (same data section: not synthesized
  again);
- eagle3-vllm-serve-cpu: the same cached head (same training section and draft length: neither synthesized nor
  trained again), served by vLLM's eagle3 method in its OpenAI server on this CPU. vLLM accepts some of its
  drafts, as often as the runtime does within the noise of the counts.
The other two trained profiles train heads as eagle3-local does; each mode trains, exports and serves losslessly
in tests/integration/draft/test_train_modes.py. (CI time: one module, so the head is trained once; the runtime's
run of it used to be a second eagle3-local run of its own.)
"""
from __future__ import annotations

import json
import math
import re
import subprocess
import sys

import pandas as pd
import pytest

from specops.backends.vllm import cpu as vllm_cpu
from tests.integration.support import REPO_ROOT, SHARED_CACHE, service_env

# Three real runs share one module fixture (training, serving and benchmarking each): the suite-wide 900 s
# per-test timeout would count them all against the first test.
pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(3600)]

K = 3
# The data set both profiles train on. CI time: synthesis ~5 s per sample here.
DATA = ["draft.train.data.num_samples=16", "draft.train.data.max_tokens=48"]
# The head: ~3 s per step; 16 samples make 24 steps in the default 2 epochs. So trained, it accepted 10.6% at position
# 0 in the runtime and 6.9% in vLLM, over ~170 verification steps each (2026-11-28): far above the zero the vLLM
# comparison must rule out.
HEAD = ["draft.train.max_steps=24", "draft.train.seq_len=256", f"method.num_speculative_tokens={K}"]
# A draft model trained for three steps accepts almost nothing, so the adaptive draft length would (rightly) stop
# drafting after its first measurements, and whether the benchmark window saw any drafts would depend on timing
# (CI once saw none). A fixed draft length makes every step draft, so the served module is exercised on every
# benchmarked request.
DRAFT_MODEL = ["draft.train.max_steps=3", "draft.train.seq_len=128", "draft.train.batch_size=2"]
MEASURE = ["benchmark.num_requests=4", "benchmark.output_tokens=48", "benchmark.warmup_requests=0"]
CHECKED = ["backend.draft_length=fixed", "comparison.lossless_prompts=3", "comparison.lossless_max_tokens=24"]
RUNS = {"eagle3-local": [*DATA, *HEAD, *MEASURE, *CHECKED],
        "draft-target-local": [*DATA, *DRAFT_MODEL, *MEASURE, *CHECKED, "benchmark.output_tokens=16"],
        "eagle3-vllm-serve-cpu": [*DATA, *HEAD, *MEASURE, "comparison.baseline=false", "comparison.lossless_prompts=0"]}
STEPS = {"eagle3-local": 24, "draft-target-local": 3}
TASK = r"Task run '(\w+)-\w+' - Finished in state (Completed)"


def specops_run(env, profile: str) -> subprocess.CompletedProcess:
    args = [sys.executable, "-m", "cli", "run", profile, "--run-id", "first"]
    for item in RUNS[profile]:
        args += ["--set", item]
    proc = subprocess.run(args, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-5000:]
    return proc


def states(proc: subprocess.CompletedProcess) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for task, state in re.findall(TASK, proc.stdout + proc.stderr):
        out.setdefault(task, []).append(state)
    return out


@pytest.fixture(scope="module")
def runs(embedded_model, tmp_path_factory):
    assert not vllm_cpu.preflight(), vllm_cpu.preflight()
    tmp = tmp_path_factory.mktemp("trained-profiles")
    cache = tmp / "cache"
    cache.mkdir()
    # Only the converted target is shared: data, drafts and repositories start empty.
    (cache / "embedded").symlink_to(SHARED_CACHE / "embedded", target_is_directory=True)
    env = service_env(tmp, SPECOPS_CACHE=str(cache))
    return tmp / "artifacts", {p: specops_run(env, p) for p in RUNS}


def manifest(artifacts, profile: str) -> dict:
    return json.loads((artifacts / profile / "first" / "manifest.json").read_text())


@pytest.mark.parametrize("profile", list(STEPS))
def test_profile_trains_serves_and_reports_valid(runs, profile):
    artifacts, done = runs
    run = artifacts / profile / "first"
    frame = pd.read_csv(run / "comparison.csv").set_index("variant")
    assert frame["valid"].iloc[0] == "VALID"
    lossless = json.loads((run / "check" / "lossless.json").read_text())
    # the benchmark's own answers are checked: its 4 measured prompts (the separate check of 3 is not needed)
    assert lossless["valid"] and lossless["compared"] == 4
    assert lossless["source"].startswith("the benchmark's own answers: 4 measured prompts"), lossless
    spec = frame.loc["speculative"]
    assert spec["num_draft_tokens"] > 0 and spec["output_token_throughput_tok_s"] > 0
    assert spec["speedup_bound"] > 0 and spec["tokens_per_step"] >= 1
    trained = json.loads((run / "train_result.json").read_text())
    assert trained["steps"] == STEPS[profile] and trained["train_seconds"] > 0
    assert "acceptance_rate" in trained["acceptance"]
    draft = next(m for m in manifest(artifacts, profile)["models"] if m["role"] == "draft")
    assert draft["source"] == f"trained:{trained['mode']}"
    assert states(done[profile])["train_draft_module"] == ["Completed"]
    assert manifest(artifacts, profile)["cached_steps"]["train draft"] is False


def test_data_is_synthesized_once_for_the_profiles(runs):
    _, done = runs
    assert "synthesize_training_data" in states(done["eagle3-local"])
    for profile in list(RUNS)[1:]:
        assert "synthesize_training_data" not in states(done[profile]), profile
    assert "training data" in done["draft-target-local"].stdout + done["draft-target-local"].stderr


def acceptance(artifacts, profile: str) -> dict:
    m = manifest(artifacts, profile)
    return next(v for v in m["variants"] if v["name"] == "speculative")["acceptance"] | {
        "draft": next(d for d in m["models"] if d["role"] == "draft"), "trained_here": not m["cached_steps"]["train draft"]}


def test_the_trained_eagle3_head_serves_in_vllm_and_accepts_like_the_runtime(runs):
    artifacts, _ = runs
    runtime, vllm = acceptance(artifacts, "eagle3-local"), acceptance(artifacts, "eagle3-vllm-serve-cpu")
    # One head: the vLLM run took data and draft from the cache and served the checkpoint eagle3-local trained
    # (same content hash).
    assert runtime["trained_here"] and not vllm["trained_here"]
    assert vllm["draft"]["sha256"] == runtime["draft"]["sha256"]
    assert vllm["available"] and "vllm:spec_decode" in vllm["source"]
    assert vllm["num_drafts"] > 0 and vllm["num_accepted_tokens"] > 0
    # Acceptance of the first draft position: a yes/no per verification step in both engines, so its rate has a
    # binomial spread; the two engines agree within 3 standard errors of the difference.
    rates = [r["accepted_per_position"][0] / r["num_drafts"] for r in (runtime, vllm)]
    pooled = sum(r["accepted_per_position"][0] for r in (runtime, vllm)) / sum(r["num_drafts"] for r in (runtime, vllm))
    se = math.sqrt(pooled * (1 - pooled) * (1 / runtime["num_drafts"] + 1 / vllm["num_drafts"]))
    print(f"position-0 acceptance: runtime {rates[0]:.3f} ({runtime['num_drafts']:.0f} steps), vLLM {rates[1]:.3f} "
          f"({vllm['num_drafts']:.0f} steps), 3 SE {3 * se:.3f}; accepted/drafted runtime "
          f"{runtime['num_accepted_tokens']:.0f}/{runtime['num_draft_tokens']:.0f}, vLLM "
          f"{vllm['num_accepted_tokens']:.0f}/{vllm['num_draft_tokens']:.0f}")
    assert abs(rates[0] - rates[1]) <= 3 * se
