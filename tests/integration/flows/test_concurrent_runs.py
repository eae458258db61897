"""Two `specops run ngram-local` at once on a cold cache (issue 14): both end VALID, the embedded model is
converted once, and each cached step (download, build, render) is computed by one run and read from the
cache by the other: the second waits on the entry's lock (produce_once, specops/sources/entry_lock.py) instead
of computing it again beside the first. From its first engine build to its last server stop a run holds
the host lock (specops/host/host_lock.py), so the second run's serving and benchmark wait for the first's: two
runs of one host never measure at the same time (issue 27).

The cache starts empty but for the pinned wheel (copied from the shared cache: the conversion, not PyPI, is
what is under test). Each run has its own Prefect API server (as two workers would) and its own results
file; they share the model cache, the only cache (Prefect keeps no task records: its result storage stays empty).
"""
from __future__ import annotations

import fcntl
import json
import shutil
import socket
import subprocess
import sys
import time

import pytest

from specops.sources import embedded
from tests.integration.support import REPO_ROOT, SHARED_CACHE, service_env

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SHRINK = ["benchmark.num_requests=4", "benchmark.warmup_requests=0", "benchmark.output_tokens=32",
          "comparison.lossless_prompts=1", "comparison.lossless_max_tokens=8"]
CONVERTING = "converting GGUF -> safetensors"  # specops/sources/embedded.py, once per conversion


@pytest.fixture(scope="module")
def both(embedded_model, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("concurrent")
    cache = tmp / "cache"
    shutil.copytree(SHARED_CACHE / "embedded" / "wheels", cache / "embedded" / "wheels")
    procs = {}
    started = time.monotonic()
    for run_id in ("a", "b"):
        env = service_env(tmp, SPECOPS_CACHE=str(cache), PREFECT_HOME=str(tmp / f"prefect-{run_id}"),
                          PREFECT_RESULTS_LOCAL_STORAGE_PATH=str(tmp / "prefect-results"),
                          SPECOPS_RESULTS_URL=f"sqlite:///{tmp / f'results-{run_id}.db'}")
        args = [sys.executable, "-m", "cli", "run", "ngram-local", "--run-id", run_id]
        for item in SHRINK:
            args += ["--set", item]
        procs[run_id] = subprocess.Popen(args, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE,
                                         stderr=subprocess.STDOUT, text=True)
    outputs = {}
    try:
        for run_id, proc in procs.items():
            outputs[run_id] = proc.communicate(timeout=1500)[0]
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=30)
    print(f"two concurrent runs took {time.monotonic() - started:.0f}s")
    yield tmp, cache, procs, outputs
    shutil.rmtree(cache, ignore_errors=True)  # a 540 MB conversion


def manifest(tmp, run_id: str) -> dict:
    return json.loads((tmp / "artifacts" / "ngram-local" / run_id / "manifest.json").read_text())


def test_both_runs_end_valid(both):
    tmp, _, procs, outputs = both
    for run_id, proc in procs.items():
        assert proc.returncode == 0, outputs[run_id][-4000:]
        assert manifest(tmp, run_id)["verdict"] == "VALID"


def test_the_second_run_waits_for_the_host_lock_and_never_measures_beside_the_first(both):
    tmp, _, _, outputs = both
    first, second = sorted((manifest(tmp, r)["window"] for r in ("a", "b")), key=lambda w: w["started_at"])
    assert first["finished_at"] <= second["started_at"], (first, second)
    assert second["waited_s"] > 0 and first["slots"] == second["slots"] == [f"cpu:{socket.gethostname()}"]
    waited = [out for out in outputs.values() if "waiting for the host lock cpu:" in out]
    assert len(waited) == 1 and "held by ngram-local run " in waited[0], {k: v[-3000:] for k, v in outputs.items()}


def test_the_model_is_converted_once_and_published_whole(both):
    _, cache, _, outputs = both
    assert sum(out.count(CONVERTING) for out in outputs.values()) == 1, {k: v[-3000:] for k, v in outputs.items()}
    entries = sorted(p.name for p in (cache / "embedded" / "smollm2-135m").iterdir())
    assert entries == [embedded.WHEEL_SHA256, f"{embedded.WHEEL_SHA256}.lock"]  # no scratch directory left
    assert (cache / "embedded" / "smollm2-135m" / embedded.WHEEL_SHA256 / embedded.MARKER).is_file()


def test_each_cached_step_is_computed_by_one_run_and_read_by_the_other(both):
    tmp, cache, _, _ = both
    a, b = (manifest(tmp, r)["cached_steps"] for r in ("a", "b"))
    assert set(a) == set(b) == {"download target", "build speculative", "render speculative", "build base",
                                "render base"}
    assert {step: sorted([a[step], b[step]]) for step in a} == {step: [False, True] for step in a}
    repos = [p for p in (cache / "repos").iterdir() if p.suffix != ".lock"]
    assert len(repos) == 2 and all((p / ".complete").is_file() for p in repos)  # each rendered once, whole
    for lock in cache.rglob("*.lock"):  # every lock released
        with lock.open() as fh:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    assert not list((tmp / "prefect-results").glob("*"))  # nothing cached outside the store
