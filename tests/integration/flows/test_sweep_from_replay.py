"""`specops sweep --from-replay 1` on real vLLM (ngram-vllm-serve-cpu on this CPU): the flow replays the profile's
n-gram grid with vLLM's own matcher over the target's greedy outputs, serves the setting it ranks best as the sweep's
series (its directory named by its knobs), and that cell's report carries the replay's prediction beside what vLLM
counted. Smallest size that takes every step: 2 prompts x 16 tokens, concurrency 1."""
from __future__ import annotations

import subprocess
import sys

import pytest

from specops.backends.vllm import cpu as vllm_cpu
from specops.results.model import RunResult
from specops.sweep.outcome import SweepOutcome
from tests.integration.support import REPO_ROOT, SHARED_CACHE, service_env

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SHRINK = ["benchmark.num_requests=2", "benchmark.output_tokens=16", "comparison.lossless_prompts=1",
          "comparison.lossless_max_tokens=8"]


def test_the_replays_best_setting_is_the_series_served(embedded_model, tmp_path):
    assert not vllm_cpu.preflight()
    cache = tmp_path / "cache"  # no cells or greedy outputs of an earlier session
    cache.mkdir()
    (cache / "embedded").symlink_to(SHARED_CACHE / "embedded", target_is_directory=True)
    args = [sys.executable, "-m", "cli", "sweep", "ngram-vllm-serve-cpu", "--from-replay", "1", "--concurrency", "1",
            "--run-id", "replayed"]
    for item in SHRINK:
        args += ["--set", item]
    proc = subprocess.run(args, cwd=REPO_ROOT, env=service_env(tmp_path, SPECOPS_CACHE=str(cache)),
                          capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-3000:]
    assert "replay's 1 best" in proc.stderr + proc.stdout, proc.stdout[-3000:] + proc.stderr[-3000:]
    run = tmp_path / "artifacts" / "ngram-vllm-serve-cpu" / "replayed"
    outcome = SweepOutcome.model_validate_json((run / "sweep.json").read_text())
    (cell,) = outcome.cells
    assert cell.setting and outcome.server_starts == {"base": 1, "speculative": 1}, (cell, outcome.server_starts)
    (series,) = [d for d in run.iterdir() if d.is_dir() and d.name.startswith(f"k{cell.k}-")]
    result = RunResult.model_validate_json((series / "c1" / "manifest.json").read_text())
    assert result.status.value == "ok" and result.speedup is not None, (result.status, result.reasons, result.failure)
    knobs = dict(o.split("=") for o in cell.setting)  # the served setting is the one the replay predicted for
    assert result.predicted.setting == (f"ngram min {knobs['method.prompt_lookup_min']} max "
                                        f"{knobs['method.prompt_lookup_max']} K {cell.k}")
    measured = result.variant("speculative").acceptance.mean_accepted_per_step
    assert measured is None or abs(measured - result.predicted.accepted_per_step) <= 0.1, (measured, result.predicted)
