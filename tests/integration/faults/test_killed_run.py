"""`kill -9` of `specops run` mid-benchmark: nothing it started outlives it.

Real tritonserver, genai-perf, perf_analyzer and Prefect API server. When the run is SIGKILLed
while perf_analyzer is sending requests, tritonserver (its death signal), its stubs (they exit
when orphaned), genai-perf and perf_analyzer (their guard's death signal) and the Prefect API
server (its guard) are gone within seconds, their ports free, and `specops janitor` finds nothing
of the run to stop; it ends the run's status failed at the step it was in and writes its row (issue 40: a run's
own record, from its first moment). So for a run killed while it waits for the host lock, before any server, while
it downloads (converts) its model, while its servers start, and while it writes its report (its row says it did not
finish, whatever it had recorded).
When the guard is SIGKILLed together with the run (nothing then kills the tool), `specops janitor` stops what is
left of the tool's process group.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import time

import psutil
import pytest

from prefect_adapters.slot_limits import WAIT_STEP
from specops.results.model import Status
from specops.results.store import ResultsStore
from tests.integration.faults.support import (
    SHRINK,
    busy_ports,
    label,
    ports_of,
    specops,
    start_run,
    wait_for_processes,
    wait_gone,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow]

BENCHMARKING = {"tritonserver", "genai-perf", "perf_analyzer", "prefect-api"}
# AIPerf titles its processes "aiperf <service>"; it is benchmarking once a worker runs.
AIPERF_BENCHMARKING = {"tritonserver", "aiperf worker", "aiperf timing_manager", "prefect-api"}
DEATH_BOUND_S = 10.0


@pytest.mark.parametrize("tool", ["genai-perf", "aiperf"])
def test_a_sigkilled_run_leaves_no_process_and_no_port(tool, embedded_model, tmp_path):
    run = start_run(tmp_path, [*SHRINK, f"benchmark.tool={tool}"], **own_cache(tmp_path, embedded_model))
    try:
        wait_for_processes(run, BENCHMARKING if tool == "genai-perf" else AIPERF_BENCHMARKING,
                           timeout_s=600)
        everything = run.processes()  # while the root lives: its whole tree
        labels = sorted(label(p) for p in everything)
        assert "guard" in labels and "triton_python_backend_stub" in labels, labels
        ports = ports_of(run, everything)
        assert len(ports) >= 4, ports  # the server's http, grpc, metrics; the Prefect API's
        records = {r["kind"]: r for r in run.records()}
        assert {"server", "bench-tool", "prefect-server"} <= records.keys(), records
        flow_run = records["server"]["owner"]
        assert flow_run and records["bench-tool"]["owner"] == flow_run  # the hooks reap by it
        run.proc.kill()
        run.proc.wait()
        left, took = wait_gone(everything, DEATH_BOUND_S)
        assert left == [], [(p.pid, label(p)) for p in left]
        print(f"{len(everything)} processes ({', '.join(labels)}) gone {took:.2f}s after kill -9")
        assert busy_ports(ports, timeout_s=5) == []
        janitor = specops(run.env, "janitor")
        assert janitor.returncode == 0, janitor.stderr
        assert not [p for p in everything if f"pid {p.pid} " in janitor.stdout], janitor.stdout
        assert run.processes() == []
        # The run could not say how it ended: the janitor says it for it, at the step it was in.
        status = json.loads((run.run_dir / "status.json").read_text())
        assert (status["state"], status["step"]) == ("failed", "benchmark"), status
        assert "ended without finishing" in status["error"]
        assert_one_failed_row(tmp_path, run, "benchmark", janitor.stdout)
    finally:
        run.stop()


def assert_one_failed_row(tmp_path, run, step: str, said: str) -> None:
    """The janitor's row of the killed run, in the results database the run would have written (its default).
    The run's own: a janitor ends every dead run it finds recorded, and another worker's test may have one."""
    with ResultsStore.open(f"sqlite:///{tmp_path / 'artifacts' / 'results.db'}") as store:
        rows = [r for r in store.history("ngram-local") if r.run_dir == str(run.run_dir)]
    assert [(r.status, r.failure.step) for r in rows] == [(Status.FAILED, step)], said
    assert "(killed)" in rows[0].failure.error and "row recorded" in said, said


def own_cache(tmp_path, embedded_model, cold: bool = False) -> dict[str, str]:
    """The run's own cache root, so its records (<cache>/live) are seen by this test's janitor alone: another
    worker's test running `specops janitor` on the shared cache would end this run and write its row into that
    test's database. The embedded model linked in; `cold`: only its wheel, so the download step converts it (seconds
    of real work, long enough to be killed in)."""
    embedded, cache = embedded_model.path.parents[2], tmp_path / "cache"
    if cold:
        shutil.copytree(embedded / "wheels", cache / "embedded" / "wheels")
    else:
        cache.mkdir()
        (cache / "embedded").symlink_to(embedded, target_is_directory=True)
    return {"SPECOPS_CACHE": str(cache)}


@pytest.mark.parametrize("step", [WAIT_STEP, "download", "serve", "report"])
def test_a_run_killed_at_a_step_is_ended_there_with_a_row(step, embedded_model, tmp_path):
    from specops.host.host_lock import hold_host_locks

    held = [f"cpu:{socket.gethostname()}"] if step == WAIT_STEP else []  # the lock a CPU run waits for
    env = own_cache(tmp_path, embedded_model, cold=step == "download")
    tiny = ["benchmark.num_requests=2", "benchmark.output_tokens=8"] if step == "report" else []  # all steps first
    with hold_host_locks(held, "the test, holding the lock", lambda _: None):
        run = start_run(tmp_path, [*SHRINK, *tiny], **env)
        try:
            deadline = time.monotonic() + 300
            while not (run.run_dir / "status.json").is_file() or \
                    json.loads((run.run_dir / "status.json").read_text()).get("step") != step:
                assert run.proc.poll() is None and time.monotonic() < deadline, run.tail()
                time.sleep(0.01)  # the report takes about a second
            run.proc.kill()
            run.proc.wait()
            wait_gone(run.processes(), DEATH_BOUND_S)
        finally:
            run.stop()
    janitor = specops(run.env, "janitor")
    assert janitor.returncode == 0, janitor.stderr
    assert run.processes() == [], [label(p) for p in run.processes()]  # nothing of the run left running
    status = json.loads((run.run_dir / "status.json").read_text())
    assert (status["state"], status["step"]) == ("failed", step), status
    assert_one_failed_row(tmp_path, run, step, janitor.stdout)


def _frozen(proc: psutil.Process) -> bool:
    try:
        proc.suspend()
        return True
    except psutil.NoSuchProcess:
        return False


def test_the_janitor_stops_a_benchmark_tool_whose_guard_died_with_the_run(embedded_model, tmp_path):
    run = start_run(tmp_path, **own_cache(tmp_path, embedded_model))
    try:
        seen = wait_for_processes(run, BENCHMARKING, timeout_s=600)
        [tool] = seen["genai-perf"]
        guard = tool.parent()
        assert label(guard) == "guard"
        os.kill(run.proc.pid, signal.SIGSTOP)  # so the run cannot notice its guard's death first
        guard.kill()
        run.proc.kill()
        run.proc.wait()
        everything = [p for p in run.processes() if p.pid != guard.pid]
        left, _ = wait_gone(everything, DEATH_BOUND_S)
        survivors = sorted(label(p) for p in left)
        assert set(survivors) <= {"genai-perf", "perf_analyzer"}, survivors
        left = [p for p in left if _frozen(p)]  # so none exits by itself in the janitor's start-up (CI saw one
        # give up on its dead server there and leave nothing to stop); a stopped process still dies by SIGKILL
        janitor = specops(run.env, "janitor")
        assert janitor.returncode == 0, janitor.stderr
        print(f"left after {DEATH_BOUND_S:g}s: {survivors}; {janitor.stdout.strip()}")
        if left:  # perf_analyzer may give up on its dead server first, and genai-perf with it
            assert f"what is left of bench-tool pid {guard.pid}'s process group" in janitor.stdout, janitor.stdout
            assert "bench-tool" in janitor.stdout.splitlines()[-1]
        assert wait_gone(left, 5)[0] == [] and run.processes() == []
    finally:
        run.stop()
