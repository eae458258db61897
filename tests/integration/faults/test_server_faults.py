"""Faults injected into real `specops run ngram-local` runs (real tritonserver, genai-perf, SmolLM2).

Each fault is injected from outside, at a phase read from the run's status.json and process tree:
the server SIGKILLed during the check and during the benchmark, frozen with SIGSTOP during the
benchmark, one of its Python-backend stubs SIGKILLed, its ports exhausted. Each asserts: the failure
is detected within its bound (injection -> status.json says failed), one message naming the cause
and no traceback, the status file naming the step, and nothing left (no process of the run, no
bound port). The runs share one artifacts root and model cache, so each starts from what the
previous fault left; the last run must then succeed.

Bounds: a dead process or a stopped one is seen at the watchdog's next poll (1 s); a silent one
after STALL_S (8 s) plus a probe timeout. DETECT_S adds the time from detection to status.json
(unwinding the task, the flow summarizing the run) on 2 busy cores.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

from specops.sources import embedded
from tests.integration.support import REPO_ROOT, SHARED_CACHE, port_free, processes_mentioning, service_env

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PROFILE = "ngram-local"
# Not interleaved: the speculative variant is served, checked and benchmarked first, so a fault
# there ends the run before the base is ever started (the suite's time goes into faults).
SHRINK = ["benchmark.num_requests=6", "benchmark.warmup_requests=0", "benchmark.output_tokens=48",
          "benchmark.interleave=false", "comparison.lossless_prompts=2", "comparison.lossless_max_tokens=32",
          "benchmark.tool=genai-perf"]  # the benchmark faults wait for perf_analyzer
DETECT_S = 10.0  # beyond the watchdog's own bound (see the module docstring)
LEFTOVER_S = 15.0  # the run's teardown: SIGTERM, the server's exit timeout, SIGKILL


@dataclass
class Outcome:
    returncode: int
    stdout: str
    stderr: str
    detected_s: float  # injection -> status.json says failed
    status: dict
    run_dir: Path
    ports: list[int]


def _status(run_dir: Path) -> dict:
    try:
        return json.loads((run_dir / "status.json").read_text())
    except (OSError, json.JSONDecodeError):
        return {}


def _server_record(run_dir: Path, variant: str) -> dict:
    try:
        return json.loads((run_dir / "servers" / f"{variant}.json").read_text())
    except (OSError, json.JSONDecodeError):
        return {}


def _tool_running(run_dir: Path, name: str) -> bool:
    return any(p["name"] == name for p in processes_mentioning(str(run_dir)))


def run_with_fault(env: dict, run_id: str, ready, inject, sets: list[str] = (), timeout_s: float = 600,
                   launcher: tuple[str, ...] = ("-m", "cli")) -> Outcome:
    """Start `specops run`, wait until ready(run_dir), inject(run_dir), and follow the run to its end.
    inject None: the fault is in place before the run starts, and detection counts from the start."""
    artifacts = Path(env["SPECOPS_ARTIFACTS"])
    run_dir = artifacts / PROFILE / run_id
    args = [sys.executable, *launcher, "run", PROFILE, "--run-id", run_id]
    for item in [*SHRINK, *sets]:
        args += ["--set", item]
    out, err = run_dir.parent / f"{run_id}.stdout", run_dir.parent / f"{run_id}.stderr"
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w") as fo, err.open("w") as fe:
        started = time.monotonic()
        proc = subprocess.Popen(args, cwd=REPO_ROOT, env=env, stdout=fo, stderr=fe)
        try:
            deadline = time.monotonic() + timeout_s
            while inject is not None and not ready(run_dir):
                assert proc.poll() is None, f"run ended before the fault: {err.read_text()[-3000:]}"
                assert time.monotonic() < deadline, "the run never reached the fault's phase"
                time.sleep(0.05)
            ports = [p for v in ("speculative", "base") for p in _server_record(run_dir, v).get("ports", [])]
            injected = time.monotonic() if inject is not None else started
            if inject is not None:
                inject(run_dir)
            while _status(run_dir).get("state") in ("running", None):
                assert time.monotonic() - injected < 120, "failure not detected within 120 s"
                time.sleep(0.05)
            detected = time.monotonic() - injected
            proc.wait(timeout=180)
        finally:
            if proc.poll() is None:
                proc.kill()
    return Outcome(proc.returncode, out.read_text(), err.read_text(), detected, _status(run_dir), run_dir, ports)


def assert_clean(outcome: Outcome, step: str, variant: str, *causes: str, bound_s: float) -> None:
    """Detected within bound_s, one message naming the cause, status failed at step, nothing left."""
    assert outcome.returncode == 1, outcome.stderr[-3000:]
    assert outcome.detected_s <= bound_s, f"detected after {outcome.detected_s:.1f}s (bound {bound_s:.0f}s)"
    for cause in causes:
        assert cause in outcome.stderr, outcome.stderr[-3000:]
    assert f"{PROFILE} FAILED at {step} ({variant})" in outcome.stderr, outcome.stderr[-3000:]
    assert "Traceback" not in outcome.stderr, outcome.stderr[-3000:]
    s = outcome.status
    assert (s["state"], s["step"], s["variant"]) == ("failed", step, variant), s
    assert all(cause in s["error"] for cause in causes), s
    deadline = time.monotonic() + LEFTOVER_S
    while processes_mentioning(str(outcome.run_dir)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert processes_mentioning(str(outcome.run_dir)) == []
    assert [p for p in outcome.ports if not port_free("127.0.0.1", p)] == []
    print(f"\n{outcome.run_dir.name}: detected in {outcome.detected_s:.1f}s: {s['error'].splitlines()[0]}")


@pytest.fixture(scope="module")
def env(embedded_model, tmp_path_factory):
    """A model cache of the suite's own (a copy of the shared converted entry and wheel): the
    cache faults damage it, and the run after them converts the model again."""
    tmp = tmp_path_factory.mktemp("faults")
    shutil.copytree(SHARED_CACHE / "embedded", tmp / "cache" / "embedded", ignore=shutil.ignore_patterns("*.corrupt-*"))
    yield service_env(tmp, SPECOPS_CACHE=str(tmp / "cache"))
    shutil.rmtree(tmp / "cache", ignore_errors=True)


def _weights(env: dict) -> Path:
    entry = Path(env["SPECOPS_CACHE"]) / "embedded" / "smollm2-135m" / embedded.WHEEL_SHA256
    return entry / "model" / "model.safetensors"


def _restore_entry(env: dict) -> None:
    """Put a good copy back (the next fault needs an entry to damage; converting would take a minute)."""
    entry = _weights(env).parents[1]
    shutil.copytree(SHARED_CACHE / "embedded" / "smollm2-135m" / entry.name, entry)


def test_cached_model_truncated(env):
    weights = _weights(env)
    os.truncate(weights, weights.stat().st_size // 2)
    outcome = run_with_fault(env, "model-truncated", None, None)
    # From the run's start: Prefect's start-up, validation and the download step's stat check.
    assert_clean(outcome, "download", "target", "is corrupt: model.safetensors: size changed", bound_s=90)
    assert "Fix: run again" in outcome.stderr and not weights.exists()


def test_cached_model_changed_with_the_same_size(env):
    _restore_entry(env)
    weights = _weights(env)
    size = weights.stat().st_size
    with weights.open("r+b") as fh:  # other numbers in a tensor, same length
        fh.seek(size // 3)
        data = fh.read(16)
        fh.seek(size // 3)
        fh.write(bytes(b ^ 0xFF for b in data))
    outcome = run_with_fault(env, "model-changed", None, None)
    assert_clean(outcome, "download", "target", "model.safetensors: content changed (same size", bound_s=90)
    assert not weights.exists()  # moved aside: the next run (below) converts the model again


def _signal_server(variant: str, sig: int):
    def inject(run_dir: Path) -> None:
        os.kill(_server_record(run_dir, variant)["pid"], sig)
    return inject


def _in_check(variant: str):
    def ready(run_dir: Path) -> bool:
        s = _status(run_dir)
        return s.get("step") == "check" and s.get("variant") == variant and bool(_server_record(run_dir, variant))
    return ready


def _in_benchmark(variant: str, settle_s: float = 3.0):
    """The variant's benchmark round is under way: perf_analyzer runs and requests flow."""
    seen: dict[str, float] = {}

    def ready(run_dir: Path) -> bool:
        s = _status(run_dir)
        if not (s.get("step") == "benchmark" and s.get("variant") == variant and _tool_running(run_dir, "perf_analyzer")):
            return False
        first = seen.setdefault("at", time.monotonic())
        return time.monotonic() - first >= settle_s
    return ready


def test_server_killed_during_the_check(env):
    """The first run after the cache faults: it converts the model again before it gets here."""
    outcome = run_with_fault(env, "killed-in-check", _in_check("speculative"),
                             _signal_server("speculative", signal.SIGKILL))
    # The smoke request or the lossless check, whichever the kill lands in: both are the check step.
    assert_clean(outcome, "check", "speculative", "speculative, tritonserver pid", "was killed by SIGKILL",
                 bound_s=1 + DETECT_S)


def test_server_killed_during_the_benchmark(env):
    outcome = run_with_fault(env, "killed-in-benchmark", _in_benchmark("speculative"),
                             _signal_server("speculative", signal.SIGKILL))
    assert_clean(outcome, "benchmark", "speculative", "during the genai-perf benchmark, tritonserver pid",
                 "was killed by SIGKILL",
                 bound_s=1 + DETECT_S)


def test_server_frozen_during_the_benchmark(env):
    outcome = run_with_fault(env, "frozen-in-benchmark", _in_benchmark("speculative"),
                             _signal_server("speculative", signal.SIGSTOP))
    assert_clean(outcome, "benchmark", "speculative", "is stopped (SIGSTOP: pid", "and answers nothing",
                 bound_s=1 + DETECT_S)


def test_a_stub_killed_during_the_benchmark(env):
    def kill_stub(run_dir: Path) -> None:
        server = psutil.Process(_server_record(run_dir, "speculative")["pid"])
        stub = next(p for p in server.children(recursive=True) if p.name().startswith("triton_python_b"))
        stub.kill()

    outcome = run_with_fault(env, "stub-killed", _in_benchmark("speculative"), kill_stub)
    assert_clean(outcome, "benchmark", "speculative", "lost its Python-backend stub", bound_s=1 + DETECT_S)


# The one stand-in of this suite: the run's port allocator hands tritonserver ports that another
# listener already holds, on every attempt (a neighbour that takes each port first; exhausting the
# real ephemeral range would also starve the Prefect client's own connections).
PORT_THIEF = """
import socket, sys
import specops.host.processes as processes
real, held = processes.pick_free_ports, []
def taken(host, count, avoid=()):
    if sys._getframe(1).f_globals.get("__name__") != "specops.backends.triton_server":
        return real(host, count, avoid)
    socks = [socket.create_server((host, 0)) for _ in range(count)]
    held.extend(socks)
    return [s.getsockname()[1] for s in socks]
processes.pick_free_ports = taken
from cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def test_ports_taken_on_every_attempt(env):
    outcome = run_with_fault(env, "ports-taken", None, None, launcher=("-c", PORT_THIEF))
    # From the run's start: three launches, each loading the model before it binds.
    # both servers start side by side and both fail: the run names the first to fail, whichever it is
    variant = outcome.status.get("variant")
    assert variant in ("speculative", "base"), outcome.status
    assert_clean(outcome, "serve", variant, "could not bind its ports in 3 attempts", bound_s=150)


def test_the_next_run_succeeds(env):
    """After every fault above, in the same artifacts root and cache."""
    args = [sys.executable, "-m", "cli", "run", PROFILE, "--run-id", "after-faults"]
    for item in [*SHRINK, "benchmark.num_requests=3", "benchmark.output_tokens=24"]:
        args += ["--set", item]
    done = subprocess.run(args, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    run_dir = Path(env["SPECOPS_ARTIFACTS"]) / PROFILE / "after-faults"
    assert _status(run_dir)["state"] == "ok"
    assert processes_mentioning(str(run_dir)) == []
    served = json.loads((run_dir / "manifest.json").read_text())["models"][0]["sha256"]
    assert served == embedded.fetch_embedded(SHARED_CACHE, log=lambda line: None).sha256  # the model asked for

