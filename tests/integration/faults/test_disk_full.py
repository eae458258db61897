"""A full artifacts disk on the real stack: refused at the start when short, and mid-run a consistent directory.

The artifacts root is a real tmpfs (see tests/tmpfs.py). Below SPECOPS_MIN_FREE_MB the run is refused
before Prefect starts (exit 4). Filled once the benchmark is over, the run ends FAILED at the step it
was in, one line naming the file that did not fit; status.json says so, no file is left 0 bytes or
half-written, no temporary file stays, and nothing the run started is left running.
"""
from __future__ import annotations

import json
import time

import pytest

from tests.integration.faults.support import SHRINK, specops, start_run
from tests.integration.support import service_env
from tests.tmpfs import fill, small_disk

pytestmark = [pytest.mark.integration, pytest.mark.slow]
ONE_SERVER = [*SHRINK, "comparison.baseline=false"]  # the fault is in the disk, not in what is measured


def test_an_artifacts_disk_below_the_minimum_refuses_the_run_at_once(tmp_path):
    with small_disk(tmp_path / "artifacts", 4096):
        env = service_env(tmp_path, SPECOPS_MIN_FREE_MB="100", SPECOPS_RESULTS_URL=f"sqlite:///{tmp_path / 'r.db'}")
        start = time.monotonic()
        done = specops(env, "run", "ngram-local", *[a for s in ONE_SERVER for a in ("--set", s)])
        took = time.monotonic() - start
        left = list((tmp_path / "artifacts").iterdir())
    print(f"4 MB free: exit {done.returncode} after {took:.1f}s: {done.stderr.strip()}")
    assert done.returncode == 4, done.stderr
    assert "MB free, below the 100 MB a run needs (SPECOPS_MIN_FREE_MB)" in done.stderr
    assert "Traceback" not in done.stderr and "unexpected" not in done.stderr
    assert left == []


def test_a_disk_that_fills_after_the_benchmark_leaves_a_consistent_failed_run(embedded_model, tmp_path):
    artifacts = tmp_path / "artifacts"
    with small_disk(artifacts, 16 * 1024):
        run = start_run(tmp_path, ONE_SERVER, run_id="full", SPECOPS_MIN_FREE_MB="1",
                        SPECOPS_RESULTS_URL=f"sqlite:///{tmp_path / 'results.db'}")
        try:
            exports = run.run_dir / "bench"
            # The benchmark's exports are written and its server is gone: what comes next is the report.
            while not (any(exports.rglob("*.json")) and "tritonserver" not in {_name(p) for p in run.processes()}):
                assert run.proc.poll() is None, run.tail()
                time.sleep(0.02)
            fill(artifacts)
            filled = time.monotonic()
            rc = run.proc.wait(timeout=300)
            took = time.monotonic() - filled
            left = run.processes()
        finally:
            run.stop()
        output = run.tail(6000)
        status = json.loads((run.run_dir / "status.json").read_text())
        files = [p for p in run.run_dir.rglob("*") if p.is_file()]
        empty = [p for p in files if p.stat().st_size == 0 and p.suffix not in (".log", ".txt")]
        temporary = [p for p in files if p.name.endswith(".tmp") or p.name.startswith(".status.json")]
    last = [line for line in output.splitlines() if line.startswith("specops:")]
    print(f"disk filled after the benchmark: exit {rc} {took:.1f}s later; status {status['state']} at "
          f"{status['step']}: {status['error']}; stderr: {last}")
    assert rc == 1, output
    assert left == [], left
    assert status["state"] == "failed" and status["step"], status
    assert f"cannot write {run.run_dir}" in status["error"] and "No space left on device" in status["error"]
    assert len(last) == 1 and f"FAILED at {status['step']}" in last[0] and "No space left on device" in last[0]
    assert "unexpected" not in output
    assert empty == [] and temporary == [], (empty, temporary)


def _name(proc) -> str:
    try:
        return proc.name()
    except Exception:
        return ""
