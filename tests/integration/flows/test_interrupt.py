"""Interrupting a run leaves no tritonserver, stub or genai-perf process and no bound port: SIGINT (as from
Ctrl-C) during the benchmark, SIGTERM (as from a supervisor, `make down`, a cancellation) while its two servers are
still starting side by side, where the run must end within `make down`'s bound (STOP_TIMEOUT, 30 s) with its
failure written, not be killed at it (tests/integration/test_make_up_down.py once caught that)."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.integration.support import REPO_ROOT, port_free, processes_mentioning, service_env

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def wait_for(path: Path, timeout_s: float, proc: subprocess.Popen, output: Path) -> None:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        assert proc.poll() is None, f"run ended before {path.name} appeared:\n{output.read_text()[-3000:]}"
        assert time.monotonic() < deadline, f"{path} did not appear within {timeout_s}s"
        time.sleep(0.5)


# (signal, the file whose appearance marks the moment, seconds after it, where the report says the run failed)
CASES = {"sigint": (signal.SIGINT, "logs/bench-speculative-round0.log", 8, "benchmark (speculative)"),
         "sigterm": (signal.SIGTERM, "logs/server-speculative.log", 1, "serve (")}
STOP_TIMEOUT_S = 30  # the Makefile's: `make down` SIGKILLs what is left after it


@pytest.mark.parametrize("case", CASES)
def test_interrupt_cleans_up(case, embedded_model, tmp_path, sigint_interrupts):
    sig, marker, settle_s, failed_at = CASES[case]
    env = service_env(tmp_path)
    run_dir = tmp_path / "artifacts" / "ngram-local" / "interrupted"
    args = [sys.executable, "-m", "cli", "run", "ngram-local", "--run-id", "interrupted",
            "--set", "benchmark.num_requests=200", "--set", "benchmark.output_tokens=64",
            "--set", "comparison.lossless_prompts=1", "--set", "comparison.lossless_max_tokens=8",
            "--set", "benchmark.tool=genai-perf"]  # the test waits for genai-perf's processes
    output = tmp_path / "specops-run.log"  # a file, not a pipe: nobody reads while it runs
    with output.open("w") as sink:
        proc = subprocess.Popen(args, cwd=REPO_ROOT, env=env, stdout=sink, stderr=subprocess.STDOUT,
                                start_new_session=True)
    try:
        wait_for(run_dir / marker, 600, proc, output)
        time.sleep(settle_s)  # SIGINT: genai-perf is past its start-up and sending; SIGTERM: the servers load
        assert processes_mentioning(str(run_dir)), "the server should be running"
        proc.send_signal(sig)
        signalled = time.monotonic()
        proc.wait(timeout=90)
        took = time.monotonic() - signalled
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    out = output.read_text()
    assert proc.returncode != 0, out[-2000:]
    assert took < STOP_TIMEOUT_S, f"the run took {took:.1f}s to end after {sig.name}"
    assert (run_dir / "logs" / "server-speculative.log").stat().st_size > 0  # logs are kept
    report = (run_dir / "report.md").read_text()  # reported as interrupted (not failed), where it stopped
    assert "**INTERRUPTED**" in report and f"The run INTERRUPTED at **{failed_at}" in report, report
    assert json.loads((run_dir / "status.json").read_text())["state"] == "interrupted"
    deadline = time.monotonic() + 10
    while processes_mentioning(str(run_dir)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert processes_mentioning(str(run_dir)) == []
    records = sorted(run_dir.glob("servers/*.json"))  # written once a server is ready: none while they start
    assert records or case == "sigterm"
    for record in records:
        pid, ports = json.loads(record.read_text())["pid"], json.loads(record.read_text())["ports"]
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
        assert [port for port in ports if not port_free("127.0.0.1", port)] == [], f"{record.name}: port still bound"
    assert [p for p in processes_mentioning("genai-perf") if str(tmp_path) in " ".join(p["cmdline"] or [])] == []
    print(f"{case}: ended {took:.1f}s after the signal")
