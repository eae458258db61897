"""The janitor on real processes: it stops what runs that are gone left behind, per kind, and never
what a live run started; by owner for the flow hooks; everything with `everything=True`."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import psutil
import pytest

from specops.host import tracking
from specops.pipeline import janitor

REPO_ROOT = Path(__file__).resolve().parents[3]
# A run that starts a process with nothing tying it to its own life, records it, then idles.
DEAD_RUN = """
import subprocess, sys
from specops.host import tracking
tracking.set_owner_lookup(lambda: "flow-run-dead")
proc = subprocess.Popen(["sleep", "300"], start_new_session=True)
tracking.track_process(proc.pid, sys.argv[1], "left behind")
print(proc.pid, flush=True)
sys.stdin.read()
"""


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECOPS_CACHE", str(tmp_path / "cache"))


def running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def dead_run(kind: str) -> int:
    """A recorded process whose run was SIGKILLed: its pid."""
    owner = subprocess.Popen([sys.executable, "-c", DEAD_RUN, kind], cwd=REPO_ROOT, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    pid = int(owner.stdout.readline())
    owner.kill()
    owner.wait()
    return pid


def ended_pid() -> int:
    ended = subprocess.Popen(["true"])
    ended.wait()
    return ended.pid


@pytest.fixture
def live_process():
    proc = subprocess.Popen(["sleep", "300"], start_new_session=True)
    yield proc
    proc.kill()
    proc.wait()


def test_only_what_dead_runs_left_is_stopped_and_reported_per_kind(live_process):
    left = [dead_run("bench-tool"), dead_run("prefect-server")]
    tracking.set_owner_lookup(lambda: "flow-run-live")
    try:
        tracking.track_run(Path("/artifacts/ngram-local/r1"), {"kind": "own"})
        mine = tracking.track_process(live_process.pid, "server", "a live run's server")
    finally:
        tracking.set_owner_lookup(lambda: None)
    me = psutil.Process().pid
    assert mine["owner"] == "flow-run-live" and mine["owner_pid"] == me
    messages = []
    stopped = janitor.sweep(timeout_s=5, log=messages.append)
    del stopped[janitor.SHM_REGION]  # whatever killed servers elsewhere on this host left (test_janitor covers it)
    assert stopped == {"bench-tool": 1, "prefect-server": 1}
    assert not any(running(pid) for pid in left)
    # whose: the run's directory, its flow run and its specops process (the run's own record is no process it left)
    whose = f"/artifacts/ngram-local/r1 (flow run flow-run-live, pid {me})"
    assert running(live_process.pid) and janitor.live_records() == {whose: 1}
    assert janitor.summary(stopped, kept=janitor.live_records()) == (
        "janitor: stopped 1 bench-tool, 1 prefect-server; left 1 process(es)/container(s) of 1 live run(s) alone: "
        f"1 of {whose}")
    assert janitor.sweep(timeout_s=5) - Counter({janitor.SHM_REGION: 1_000_000}) == Counter()
    assert janitor.summary(Counter()) == "janitor: stopped nothing"


def test_a_flow_run_hook_stops_its_own_processes_while_its_process_lives(live_process):
    tracking.register({"pid": live_process.pid, "create_time": psutil.Process(live_process.pid).create_time(),
                       "owner": "flow-run-1", "what": "server"})
    assert janitor.reap(owner="someone-else", timeout_s=5) == 0 and running(live_process.pid)
    assert janitor.reap(owner="flow-run-1", timeout_s=5) == 1
    live_process.wait(timeout=5)
    assert list(janitor.live_dir().glob("*.json")) == []


def test_everything_stops_live_runs_too_and_ended_processes_only_lose_their_record(live_process):
    tracking.track_process(live_process.pid, "trainer", "live")
    ended = subprocess.Popen(["true"])
    record = tracking.track_process(ended.pid, "bench-tool", "ended")
    ended.wait()
    assert record["create_time"] > 0
    start = time.monotonic()
    assert janitor.sweep(everything=True, timeout_s=5) == {"trainer": 1}
    assert time.monotonic() - start < 5  # sleep dies at SIGTERM; a zombie is not waited for
    assert list(janitor.live_dir().glob("*.json")) == []


def test_a_recycled_pid_is_never_signalled(live_process):
    tracking.register({"pid": live_process.pid, "create_time": 12345.0, "kind": "server"})  # another process's
    assert janitor.sweep(everything=True, timeout_s=1) == {}
    assert running(live_process.pid)


def test_what_is_left_of_a_group_whose_leader_was_killed_is_stopped():
    # A guard SIGKILLed together with its run: the tool it led keeps the group, with no leader.
    leader = subprocess.Popen(["bash", "-c", "sleep 300 & echo $!; exec sleep 300"], stdout=subprocess.PIPE,
                              text=True, start_new_session=True)
    member = int(leader.stdout.readline())
    record = tracking.track_process(leader.pid, "bench-tool", "genai-perf")
    tracking.register(record | {"owner_pid": ended_pid()})  # as if its run had died
    leader.kill()
    leader.wait()
    assert running(member)
    assert janitor.sweep(timeout_s=5) == {"bench-tool": 1}
    assert not running(member)


def test_the_orchestrator_decides_for_the_flow_runs_it_knows(live_process):
    """A run the Prefect API calls running keeps what it started even when its specops process is not
    to be seen here (another PID namespace, a shared cache); one it calls over loses it even while
    its process lives; owners it does not know fall back to the process rule."""
    unseen_owner = tracking.register({"pid": live_process.pid, "create_time": psutil.Process(live_process.pid)
                                      .create_time(), "owner": "flow-run-running", "owner_pid": ended_pid()})
    gone_pid = dead_run("bench-tool")  # owner "flow-run-dead", its process SIGKILLed
    record = {"owner": "flow-run-dead", "owner_pid": ended_pid()}
    assert janitor.run_alive({"owner": "flow-run-running", "owner_pid": ended_pid()}, {"flow-run-running": True})
    assert not janitor.run_alive({"owner": "flow-run-x", "owner_pid": psutil.Process().pid,
                                  "owner_create_time": psutil.Process().create_time()}, {"flow-run-x": False})
    assert not janitor.run_alive(record, {"flow-run-running": True})  # unknown to the API: process rule
    assert janitor.run_alive({"owner": "other", "owner_pid": psutil.Process().pid,
                              "owner_create_time": psutil.Process().create_time()}, {})
    runs = {"flow-run-running": True, "flow-run-dead": True}
    assert janitor.owners() == {"flow-run-running", "flow-run-dead"}
    assert janitor.sweep(runs=runs, timeout_s=5) == {} and running(gone_pid) and running(live_process.pid)
    assert sum(janitor.live_records(runs).values()) == 2 and janitor.live_records() == {}
    assert janitor.sweep(runs={"flow-run-running": True}, timeout_s=5) == {"bench-tool": 1}
    assert not running(gone_pid) and running(live_process.pid) and unseen_owner.exists()
    assert janitor.sweep(runs={"flow-run-running": False}, timeout_s=5) == {"server": 1}


def test_removing_a_runs_containers_without_docker_is_quiet(monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    messages = []
    assert janitor.remove_containers("flow-run-1", timeout_s=2, log=messages.append) == 0
    assert messages == []


def test_the_janitor_removes_shared_memory_of_dead_specops_processes_only():
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(gone.stdout)
    shm = Path("/dev/shm")
    stale = shm / f"specops{dead_pid}_a1b2c3_stub"
    mine = shm / f"specops{psutil.Process().pid}_d4e5f6_stub"
    for region in (stale, mine):
        region.write_bytes(b"\0" * 1024)
    try:
        lines = []
        stopped = janitor.sweep(everything=True, log=lines.append)
        assert not stale.exists() and mine.exists()
        assert stopped[janitor.SHM_REGION] >= 1 and any(str(stale) in line for line in lines), lines
        assert "removed 1 shared-memory region(s)" in janitor.summary(Counter({janitor.SHM_REGION: 1}))
    finally:
        stale.unlink(missing_ok=True)
        mine.unlink(missing_ok=True)


# A run that records itself from its first moment (tasks/profile.py create_run_dir), says where it is, then idles.
RUN_AT_STEP = """
import json, sys, time
from pathlib import Path
from specops.host import tracking
run = Path(sys.argv[1])
status = {"state": "running", "step": "benchmark", "variant": "speculative", "started_at": time.time()}
(run / "status.json").write_text(json.dumps(status))
tracking.track_run(run, {"kind": "own"} if sys.argv[2] == "row" else None)
print("recorded", flush=True)
sys.stdin.read()
"""


def killed_run(run_dir: Path, row: bool = True) -> None:
    run_dir.mkdir(parents=True)
    proc = subprocess.Popen([sys.executable, "-c", RUN_AT_STEP, str(run_dir), "row" if row else "none"],
                            cwd=REPO_ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "recorded"
    proc.kill()
    proc.wait()


def test_a_killed_run_is_ended_where_it_was_and_handed_over_for_its_row(tmp_path):
    killed_run(tmp_path / "a")
    handed = []
    stopped = janitor.sweep(abandoned=handed.append, log=lambda _: None)
    status = json.loads((tmp_path / "a" / "status.json").read_text())
    assert (status["state"], status["step"], status["variant"]) == ("failed", "benchmark", "speculative")
    assert "ended without finishing" in status["error"] and "(killed)" in status["error"]
    assert [r["run_dir"] for r in handed] == [str(tmp_path / "a")] and handed[0]["role"] == {"kind": "own"}
    assert sum(stopped.values()) == 0 and list(tracking.records()) == []  # nothing to stop: the record is gone


def test_a_run_killed_after_writing_its_result_still_gets_its_row_and_a_sweep_gets_none(tmp_path):
    killed_run(tmp_path / "recorded")
    (tmp_path / "recorded" / "manifest.json").write_text("{}")  # killed while reporting: its row says it did not end
    killed_run(tmp_path / "sweep", row=False)
    handed = []
    janitor.sweep(abandoned=handed.append, log=lambda _: None)
    assert [r["run_dir"] for r in handed] == [str(tmp_path / "recorded")] and list(tracking.records()) == []
    assert json.loads((tmp_path / "sweep" / "status.json").read_text())["state"] == "failed"


def test_a_live_runs_record_is_never_signalled_or_ended_nor_by_its_own_hooks(tmp_path):
    run_dir = tmp_path / "live"
    run_dir.mkdir()
    (run_dir / "status.json").write_text(json.dumps({"state": "running", "step": "serve"}))
    record = tracking.track_run(run_dir, {"kind": "own"})  # this test's process: alive
    handed = []
    for kwargs in ({}, {"everything": True}, {"owner": record["owner"] or "x"}):
        janitor.sweep(abandoned=handed.append, log=lambda _: None, **kwargs)
    assert handed == [] and json.loads((run_dir / "status.json").read_text())["state"] == "running"
    tracking.untrack_run(run_dir)
    assert list(tracking.records()) == []
