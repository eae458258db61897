"""`specops calibrate` end to end on the real runtime, Triton and AIPerf (requests interleaved between the two
base servers, as `make bench-calibrate` measures), shrunk: two A/A runs of ngram-local (its base against
itself), recorded as method none, summarised, and kept out of judgement."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from specops.regression.policy import RegressionPolicy
from specops.regression.verdict import evaluate
from specops.results.store import ResultsStore
from tests.integration.support import REPO_ROOT, service_env

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SHRINK = ["benchmark.num_requests=4", "benchmark.warmup_requests=0", "benchmark.output_tokens=24",
          "comparison.lossless_prompts=2", "comparison.lossless_max_tokens=16", "benchmark.tool=aiperf"]


def failed_runs(runs: Path) -> str:
    """Why a run failed, for the assertion: its status and the end of its server logs (CI once saw a run fail at
    serve, and the table alone cannot say why)."""
    text = ""
    for status in sorted(runs.glob("*/status.json")):
        if json.loads(status.read_text())["state"] != "ok":
            text += f"\n{status}:\n{status.read_text()}"
            for log in sorted((status.parent / "logs").glob("server-*.log")):
                text += f"\n{log.name} ends:\n" + "\n".join(log.read_text().splitlines()[-15:])
    return text


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
    assert covering, table + failed_runs(tmp_path / "artifacts" / "ngram-local")
    with ResultsStore.open(f"sqlite:///{tmp_path / 'artifacts' / 'results.db'}") as store:
        runs = store.history("ngram-local")
    assert len(runs) == 2 and {r.method for r in runs} == {"none"}
    for run in runs:  # two base servers answer identically at temperature 0: the check is real (their 4 answers)
        assert run.verdict.value == "VALID" and run.lossless.compared == 4 and run.lossless.mismatches == 0
        s = run.speedup
        assert s.design.value == "requests" and s.low is not None
        assert (s.low <= 1.0 <= s.high) == (f"{s.text()}  contains 1.00x" in table)
        assert 0.5 < s.point < 2.0, s.text()  # the same server twice: nowhere near a real speedup's scale
    assert int(covering[1]) == sum(r.speedup.low <= 1.0 <= r.speedup.high for r in runs)
    assert evaluate(runs, RegressionPolicy()) == []  # A/A runs are never judged
