"""Fault injection on real runs: start `specops run`, wait for a phase by watching its process tree or
its run directory, and find every process of the run, also once its root has died.

A run is marked by an environment variable that every process it starts inherits (servers,
stubs, benchmark tools, the Prefect API server), so its processes are found after they have
been re-parented to init. A zombie counts as gone: this host's init reaps no orphan.
"""
from __future__ import annotations

import json
import re
import secrets
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import psutil

from tests.integration.support import REPO_ROOT, SHARED_CACHE, port_free, service_env

MARK = "SPECOPS_FAULT_RUN"
# Small and fast, yet long enough to catch perf_analyzer sending requests: these tests wait for genai-perf's
# processes (the profiles' default tool is AIPerf; test_killed_run asks for each tool by name).
SHRINK = ["benchmark.num_requests=4", "benchmark.output_tokens=32", "comparison.lossless_prompts=1",
          "comparison.lossless_max_tokens=8", "benchmark.tool=genai-perf"]


def label(proc: psutil.Process) -> str:
    """A name a test can ask for: tritonserver, triton_python_backend_stub, genai-perf,
    perf_analyzer, guard (specops/host/guard.py), prefect-api (uvicorn serving Prefect's API), ..."""
    try:
        cmdline = proc.cmdline()
        if any(arg.endswith("specops/host/guard.py") for arg in cmdline):
            return "guard"
        if "uvicorn" in cmdline and "prefect.server.api.server:create_app" in cmdline:
            return "prefect-api"
        return proc.name()
    except psutil.Error:
        return "?"


def running(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@dataclass
class Run:
    proc: subprocess.Popen  # `python -m cli run ...`
    run_dir: Path
    output: Path  # its stdout and stderr
    mark: str
    env: dict[str, str]

    def processes(self) -> list[psutil.Process]:
        """Every running process of this run: the root's tree while it lives, and whatever carries
        the run's mark in its environment (orphans included)."""
        found: dict[int, psutil.Process] = {}
        try:
            root = psutil.Process(self.proc.pid)
            found.update({p.pid: p for p in [root, *root.children(recursive=True)]})
        except psutil.NoSuchProcess:
            pass
        for proc in psutil.process_iter():
            try:
                if proc.pid not in found and proc.environ().get(MARK) == self.mark:
                    found[proc.pid] = proc
            except psutil.Error:
                pass
        return [p for p in found.values() if running(p)]

    def by_label(self) -> dict[str, list[psutil.Process]]:
        out: dict[str, list[psutil.Process]] = {}
        for proc in self.processes():
            out.setdefault(label(proc), []).append(proc)
        return out

    def records(self) -> list[dict]:
        """The janitor's records of what this run started (its root is their owner_pid)."""
        found = []
        for path in (Path(self.env.get("SPECOPS_CACHE", SHARED_CACHE)) / "live").glob("*.json"):
            try:
                record = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            if record.get("owner_pid") == self.proc.pid:
                found.append(record)
        return found

    def tail(self, chars: int = 3000) -> str:
        return self.output.read_text(errors="replace")[-chars:] if self.output.exists() else "(no output)"

    def stop(self) -> None:
        """Test teardown: SIGKILL whatever of the run is still running."""
        for proc in [*self.processes()]:
            try:
                proc.kill()
            except psutil.Error:
                pass
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def start_run(tmp_path: Path, overrides: Iterable[str] = SHRINK, run_id: str = "faulty",
              profile: str = "ngram-local", **env_extra: str) -> Run:
    """`specops run` on its own artifacts root and Prefect home, the model cache shared (as
    service_env does), in its own session; output to a file (a pipe nobody reads would fill)."""
    mark = secrets.token_hex(8)
    env = service_env(tmp_path, **{MARK: mark}, **env_extra)
    args = [sys.executable, "-m", "cli", "run", profile, "--run-id", run_id]
    for item in overrides:
        args += ["--set", item]
    output = tmp_path / f"specops-run-{run_id}.log"
    with output.open("w") as sink:
        proc = subprocess.Popen(args, cwd=REPO_ROOT, env=env, stdout=sink, stderr=subprocess.STDOUT,
                                start_new_session=True)
    return Run(proc, tmp_path / "artifacts" / profile / run_id, output, mark, env)


def wait_for_processes(run: Run, labels: set[str], timeout_s: float, poll_s: float = 0.1) -> dict[str, list]:
    """Block until a process of each label runs at once (e.g. genai-perf and perf_analyzer: the
    benchmark is sending requests); returns the run's processes by label at that moment. A label
    also matches the titles a tool gives its processes: "aiperf worker" matches "aiperf worker_3f2a"."""
    deadline = time.monotonic() + timeout_s
    while True:
        seen = run.by_label()
        missing = {want for want in labels if not any(have.startswith(want) for have in seen)}
        if not missing:
            return seen
        assert run.proc.poll() is None, f"the run ended before {sorted(missing)} ran:\n{run.tail()}"
        assert time.monotonic() < deadline, f"{sorted(missing)} not running after {timeout_s}s"
        time.sleep(poll_s)


def wait_for_file(run: Run, relative: str, timeout_s: float) -> Path:
    """Block until the run directory holds `relative` (e.g. logs/bench-speculative-round0.log)."""
    path = run.run_dir / relative
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        assert run.proc.poll() is None, f"the run ended before {relative} appeared:\n{run.tail()}"
        assert time.monotonic() < deadline, f"{path} did not appear within {timeout_s}s"
        time.sleep(0.2)
    return path


def wait_gone(procs: Iterable[psutil.Process], timeout_s: float) -> tuple[list[psutil.Process], float]:
    """(what still runs after timeout_s, seconds until the last one went)."""
    procs = list(procs)
    start = time.monotonic()
    while (alive := [p for p in procs if running(p)]) and time.monotonic() - start < timeout_s:
        time.sleep(0.02)
    return alive, time.monotonic() - start


def ports_of(run: Run, processes: Iterable[psutil.Process]) -> list[int]:
    """The servers' ports (their records in the run directory) and the Prefect API server's."""
    ports = [p for f in (run.run_dir / "servers").glob("*.json") for p in json.loads(f.read_text())["ports"]]
    for proc in processes:
        if label(proc) == "prefect-api":
            ports.append(int(re.search(r"--port (\d+)", " ".join(proc.cmdline()))[1]))
    return ports


def busy_ports(ports: Iterable[int], timeout_s: float) -> list[int]:
    deadline = time.monotonic() + timeout_s
    while (busy := [p for p in ports if not port_free("127.0.0.1", p)]) and time.monotonic() < deadline:
        time.sleep(0.1)
    return busy


def specops(env: dict[str, str], *args: str, timeout_s: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cli", *args], cwd=REPO_ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout_s)
