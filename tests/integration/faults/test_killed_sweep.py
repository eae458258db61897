"""`kill -9` of a sweep while its first server is up, then `specops janitor`: every status the sweep
opened ends failed at its step, the server and its shared memory are gone, nothing is left running."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from specops.profile.loader import load_profile
from specops.sweep.cells import CellStore
from specops.sweep.grid import cell_key
from tests.integration.faults.support import specops, wait_gone
from tests.integration.support import REPO_ROOT, SHARED_CACHE, service_env

pytestmark = [pytest.mark.integration, pytest.mark.slow]
SHRINK = ["benchmark.num_requests=2", "benchmark.output_tokens=16", "benchmark.warmup_requests=0",
          "comparison.lossless_prompts=1", "comparison.lossless_max_tokens=8"]


def test_a_killed_sweep_is_finished_by_the_janitor(embedded_model, tmp_path):
    store, sha = CellStore(SHARED_CACHE / "sweeps"), load_profile("ngram-local", SHRINK).sha256
    # a cell an earlier sweep of these settings kept would be reused, not served
    store.path(cell_key(sha, SHRINK, 1, 1)).unlink(missing_ok=True)
    env = service_env(tmp_path)
    args = [sys.executable, "-m", "cli", "sweep", "ngram-local", "--k", "1", "--concurrency", "1", "--run-id", "killed"]
    for override in SHRINK:
        args += ["--set", override]
    sweep_dir = tmp_path / "artifacts" / "ngram-local" / "killed"
    log = tmp_path / "sweep.log"
    with log.open("w") as sink:
        proc = subprocess.Popen(args, cwd=REPO_ROOT, env=env, stdout=sink, stderr=subprocess.STDOUT,
                                start_new_session=True)
    try:
        deadline = time.monotonic() + 600
        # A server is up (its shared memory exists) and has been measured. Between two servers of the sweep
        # there is neither a server record nor a region: the janitor knows a run by its servers' records.
        while not (_benchmarking(sweep_dir) and list(Path("/dev/shm").glob(f"specops{proc.pid}_*"))):
            assert proc.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.05)
        tree = psutil.Process(proc.pid).children(recursive=True)
        proc.kill()
        proc.wait()
        killed = time.monotonic()
        janitor = specops(env, "janitor")
        left, _ = wait_gone(tree, 15)
        took = time.monotonic() - killed
        assert left == [], [(p.pid, p.name()) for p in left]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert janitor.returncode == 0, janitor.stderr
    states = {str(p.parent.relative_to(sweep_dir)): json.loads(p.read_text()) for p in sweep_dir.rglob("status.json")}
    print(f"sweep killed; {took:.1f}s later after the janitor: {json.dumps({k: (v['state'], v['step']) for k, v in states.items()})}"
          f"\n{janitor.stdout}")
    assert "." in states and len(states) >= 2, states
    assert all(s["state"] == "failed" and s["step"] and "ended without finishing" in s["error"]
               for s in states.values()), states
    # Gone: removed by the janitor, which names each, unless a server of another run started meanwhile and
    # swept them first (every server start does; CI's other worker does): tests/unit/host/test_janitor.py covers it.
    assert list(Path("/dev/shm").glob(f"specops{proc.pid}_*")) == []


def _benchmarking(sweep_dir: Path) -> bool:
    for path in sweep_dir.rglob("status.json"):
        try:
            if json.loads(path.read_text()).get("step") == "benchmark":
                return True
        except ValueError:  # never half a file (atomic), but a reader may race the first write's rename
            continue
    return False
