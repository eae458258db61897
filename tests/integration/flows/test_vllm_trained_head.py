"""The EAGLE-3 head specops trains (ModelOpt, exported with export_speculative_decoding) deploys in real vLLM: the
same cached head, served by the embedded runtime (eagle3-local) and by vLLM's eagle3 method in its OpenAI server
on this CPU (eagle3-vllm-serve-cpu), drafts on the same prompts, greedy, at the same fixed draft length. vLLM
accepts some of its drafts, and as often as the runtime does, within the noise of the counts.

The cache starts empty of data and drafts: the first run synthesizes a small data set and trains (shrunk by
overrides to what CI can afford); the second takes both from the cache (same training section and draft length).
"""
from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from specops.backends.vllm import cpu as vllm_cpu
from tests.integration.support import REPO_ROOT, SHARED_CACHE, service_env

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(3600)]

K = 3
# CI time: synthesis ~5 s and training ~3 s per sample/step here; at 24 samples x 64 tokens and 60 steps the head
# accepted ~11% at position 0 over ~225 drafts (CI, 2026-11-28), far above the zero the test must rule out.
TRAIN = ["draft.train.data.num_samples=16", "draft.train.data.max_tokens=48", "draft.train.max_steps=40",
         "draft.train.seq_len=256"]
MEASURE = [f"method.num_speculative_tokens={K}", "comparison.baseline=false", "benchmark.num_requests=4",
           "benchmark.output_tokens=48", "benchmark.warmup_requests=0", "comparison.lossless_prompts=0"]


def specops_run(env, artifacts, profile: str, *more: str) -> dict:
    args = [sys.executable, "-m", "cli", "run", profile, "--run-id", "head"]
    for item in [*TRAIN, *MEASURE, *more]:
        args += ["--set", item]
    proc = subprocess.run(args, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=3000)
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-5000:]
    manifest = json.loads((artifacts / profile / "head" / "manifest.json").read_text())
    return next(v for v in manifest["variants"] if v["name"] == "speculative")["acceptance"] | {
        "draft": next(m for m in manifest["models"] if m["role"] == "draft"),
        "trained_here": not manifest["cached_steps"]["train draft"],
        "synthesized": "Task run 'synthesize_training_data-" in proc.stdout + proc.stderr}


def test_the_trained_eagle3_head_serves_in_vllm_and_accepts_like_the_runtime(embedded_model, tmp_path):
    assert not vllm_cpu.preflight(), vllm_cpu.preflight()
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "embedded").symlink_to(SHARED_CACHE / "embedded", target_is_directory=True)
    env = service_env(tmp_path, SPECOPS_CACHE=str(cache))
    runtime = specops_run(env, tmp_path / "artifacts", "eagle3-local", "backend.draft_length=fixed")
    vllm = specops_run(env, tmp_path / "artifacts", "eagle3-vllm-serve-cpu")
    # One head: the second run took data and draft from the cache and served the checkpoint the first trained
    # (same content hash).
    assert runtime["trained_here"] and runtime["synthesized"]
    assert not vllm["trained_here"] and not vllm["synthesized"]
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
