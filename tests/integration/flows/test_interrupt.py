"""Interrupting a run during the benchmark leaves no tritonserver, stub or genai-perf process and
no bound port (SIGINT as from Ctrl-C, SIGTERM as from a supervisor)."""
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


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["sigint", "sigterm"])
def test_interrupt_during_benchmark_cleans_up(sig, embedded_model, tmp_path, sigint_interrupts):
    env = service_env(tmp_path)
    run_dir = tmp_path / "artifacts" / "ngram-local" / "interrupted"
    args = [sys.executable, "-m", "cli", "run", "ngram-local", "--run-id", "interrupted",
            "--set", "benchmark.num_requests=200", "--set", "benchmark.output_tokens=64",
            "--set", "comparison.lossless_prompts=1", "--set", "comparison.lossless_max_tokens=8",
            "--set", "benchmark.tool=genai-perf"]  # the test waits for genai-perf's processes
    if sig == signal.SIGTERM:  # the speculative server alone (CI time); SIGINT leaves both servers up to stop
        args += ["--set", "comparison.baseline=false"]
    output = tmp_path / "specops-run.log"  # a file, not a pipe: nobody reads while it runs
    with output.open("w") as sink:
        proc = subprocess.Popen(args, cwd=REPO_ROOT, env=env, stdout=sink, stderr=subprocess.STDOUT,
                                start_new_session=True)
    try:
        wait_for(run_dir / "logs" / "bench-speculative-round0.log", 600, proc, output)
        time.sleep(8)  # genai-perf is past its start-up and perf_analyzer is sending requests
        assert processes_mentioning(str(run_dir)), "the server should be running during the benchmark"
        record = json.loads((run_dir / "servers" / "speculative.json").read_text())
        proc.send_signal(sig)
        proc.wait(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    out = output.read_text()
    assert proc.returncode != 0, out[-2000:]
    assert (run_dir / "logs" / "server-speculative.log").stat().st_size > 0  # logs are kept
    report = (run_dir / "report.md").read_text()  # an interrupted run is reported as failed, where it stopped
    assert "**FAILED**" in report and "The run FAILED at **benchmark (speculative)**" in report, report
    deadline = time.monotonic() + 10
    while processes_mentioning(str(run_dir)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert processes_mentioning(str(run_dir)) == []
    assert not psutil.pid_exists(record["pid"]) or psutil.Process(record["pid"]).status() == psutil.STATUS_ZOMBIE
    for port in record["ports"]:
        assert port_free("127.0.0.1", port), f"port {port} still bound"
    assert [p for p in processes_mentioning("genai-perf") if str(tmp_path) in " ".join(p["cmdline"] or [])] == []
