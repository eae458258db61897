"""`specops calibrate` end to end on the real runtime, Triton and AIPerf (requests interleaved between the two
base servers, as `make bench-calibrate` measures), shrunk: two A/A runs of ngram-local (its base against
itself), recorded as method none, summarised, and kept out of judgement."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest

from specops.regression.policy import RegressionPolicy
from specops.regression.verdict import evaluate
from specops.results.store import ResultsStore
from tests.integration.support import REPO_ROOT, service_env

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SHRINK = ["benchmark.num_requests=4", "benchmark.warmup_requests=0", "benchmark.output_tokens=24",
          "comparison.lossless_prompts=2", "comparison.lossless_max_tokens=16", "benchmark.tool=aiperf"]


def test_calibrate_runs_the_base_against_itself_and_reports_coverage(tmp_path):
    env = service_env(tmp_path)
    args = [sys.executable, "-m", "cli", "calibrate", "ngram-local", "--runs", "2", "--run-id", "aa"]
    for item in SHRINK:
        args += ["--set", item]
    done = subprocess.run(args, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    table = (tmp_path / "artifacts" / "calibrate" / "ngram-local" / "aa" / "calibration.md").read_text()
    text = table.split("```")[1].strip()
    assert text.startswith("A/A calibration of ngram-local: its base against itself, 2 runs") and text in done.stdout
    # Once: the CLI prints it (the flow's result); the run's log, on the same console, says where it is.
    assert (done.stdout + done.stderr).count(text) == 1, done.stdout[-4000:] + done.stderr[-4000:]
    covering = re.search(r"(\d) of 2 95% intervals contain 1.00x", table)
    assert covering, table
    with ResultsStore.open(f"sqlite:///{tmp_path / 'artifacts' / 'results.db'}") as store:
        runs = store.history("ngram-local")
    assert len(runs) == 2 and {r.method for r in runs} == {"none"}
    for run in runs:  # two base servers answer identically at temperature 0: the check is real
        assert run.verdict.value == "VALID" and run.lossless.compared == 2 and run.lossless.mismatches == 0
        s = run.speedup
        assert s.design.value == "requests" and s.low is not None
        assert (s.low <= 1.0 <= s.high) == (f"{s.text()}  contains 1.00x" in table)
        assert 0.5 < s.point < 2.0, s.text()  # the same server twice: nowhere near a real speedup's scale
    assert int(covering[1]) == sum(r.speedup.low <= 1.0 <= r.speedup.high for r in runs)
    assert evaluate(runs, RegressionPolicy()) == []  # A/A runs are never judged
