"""Trained-draft profiles end to end with `specops run`, shrunk by overrides: data is synthesized
by the served target, the draft trained with ModelOpt (or distilled), served by the embedded
runtime, checked lossless on HumanEval prompts and benchmarked.

Two of the four, one per kind of draft the pipeline serves: heads on the target (eagle3-local)
and a model of its own (draft-target-local). The other two train heads as eagle3-local does, and
each mode trains, exports and serves losslessly in tests/integration/draft/test_train_modes.py;
a run that takes data and draft from the cache is tests/integration/flows/test_vllm_trained_head.py
(CI time: each run here costs ~3 minutes).

The cache starts empty of data and drafts (only the converted embedded model is shared), so the
first profile really synthesizes and every profile really trains; the data set is shared (same
data section).
"""
from __future__ import annotations

import json
import re
import subprocess
import sys

import pandas as pd
import pytest

from tests.integration.support import REPO_ROOT, SHARED_CACHE, service_env

# Two real runs share one module fixture (training, serving and genai-perf each): the
# suite-wide 900 s per-test timeout would count them all against the first test.
pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(3600)]

# A draft trained for three steps accepts almost nothing, so the adaptive draft length would
# (rightly) stop drafting after its first measurements, and whether the benchmark window saw
# any drafts would depend on timing (CI once saw none). A fixed draft length makes every step
# draft, so the served module is exercised on every benchmarked request.
SHRINK = ["draft.train.data.num_samples=6", "draft.train.data.max_tokens=16", "draft.train.max_steps=3",
          "draft.train.seq_len=128", "draft.train.batch_size=2", "backend.draft_length=fixed",
          "benchmark.num_requests=2", "benchmark.warmup_requests=0", "benchmark.output_tokens=16",
          "comparison.lossless_prompts=3", "comparison.lossless_max_tokens=24"]
PROFILES = ["eagle3-local", "draft-target-local"]
TASK = r"Task run '(\w+)-\w+' - Finished in state (Completed)"


def specops_run(env, profile: str, run_id: str, *more: str) -> subprocess.CompletedProcess:
    args = [sys.executable, "-m", "cli", "run", profile, "--run-id", run_id]
    for item in [*SHRINK, *more]:
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
    tmp = tmp_path_factory.mktemp("trained-profiles")
    cache = tmp / "cache"
    cache.mkdir()
    # Only the converted target is shared: data, drafts and repositories start empty.
    (cache / "embedded").symlink_to(SHARED_CACHE / "embedded", target_is_directory=True)
    env = service_env(tmp, SPECOPS_CACHE=str(cache))
    return tmp / "artifacts", {p: specops_run(env, p, "first") for p in PROFILES}


@pytest.mark.parametrize("profile", PROFILES)
def test_profile_trains_serves_and_reports_valid(runs, profile):
    artifacts, done = runs
    run = artifacts / profile / "first"
    frame = pd.read_csv(run / "comparison.csv").set_index("variant")
    assert frame["valid"].iloc[0] == "VALID"
    lossless = json.loads((run / "check" / "lossless.json").read_text())
    assert lossless["valid"] and lossless["compared"] == 3
    spec = frame.loc["speculative"]
    assert spec["num_draft_tokens"] > 0 and spec["output_token_throughput_tok_s"] > 0
    assert spec["speedup_bound"] > 0 and spec["tokens_per_step"] >= 1
    trained = json.loads((run / "train_result.json").read_text())
    assert trained["steps"] == 3 and trained["train_seconds"] > 0 and "acceptance_rate" in trained["acceptance"]
    manifest = json.loads((run / "manifest.json").read_text())
    draft = next(m for m in manifest["models"] if m["role"] == "draft")
    assert draft["source"] == f"trained:{trained['mode']}"
    assert states(done[profile])["train_draft_module"] == ["Completed"]
    assert manifest["cached_steps"]["train draft"] is False


def test_data_is_synthesized_once_for_the_profiles(runs):
    _, done = runs
    assert "synthesize_training_data" in states(done["eagle3-local"])
    for profile in PROFILES[1:]:
        assert "synthesize_training_data" not in states(done[profile]), profile
        assert "training data" in done[profile].stdout + done[profile].stderr

