"""tools/stop_services.py stops a `make up` session leader's processes before the leader: a STAND-IN leader
that, as Prefect 3.9's worker does when it stops, kills its child outright, and a STAND-IN flow run that ends
cleanly on its one SIGTERM (writes a file). Stopped in that order, the child ends cleanly, all on SIGTERM."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
spec = importlib.util.spec_from_file_location("stop_services", ROOT / "tools" / "stop_services.py")
stop_services = importlib.util.module_from_spec(spec)
spec.loader.exec_module(stop_services)


def test_the_leaders_processes_end_on_their_sigterm_before_the_leader_is_signalled(tmp_path):
    ended = tmp_path / "ended"
    child = f"trap 'sleep 0.5; echo cleanly > {ended}; exit 0' TERM; sleep 60 & wait"
    # "prefect" in its command line: stop_services only stops the leader `make up` started
    leader = (f": prefect worker stand-in; bash -c \"{child}\" & c=$!; trap 'kill -9 $c; exit 0' TERM; "
              "echo up; sleep 60 & wait")
    proc = subprocess.Popen(["bash", "-c", leader], start_new_session=True, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline() == "up\n"
        time.sleep(0.3)  # the child's trap is set
        pid_file = tmp_path / "worker.pid"
        pid_file.write_text(f"{proc.pid}\n")
        message = stop_services.stop(pid_file, timeout_s=10)
        assert message.startswith("worker: stopped ") and message.endswith("(SIGTERM)"), message
        assert ended.read_text() == "cleanly\n"  # its own SIGTERM, not the leader's SIGKILL
        assert not pid_file.exists()
    finally:
        proc.kill()
        proc.wait()


# A STAND-IN Triton Python stub: named as the real one (a link to Python), and ignoring SIGTERM as it does
# (pb_stub.cc).
IGNORE_SIGTERM = "'import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print(1, flush=True); time.sleep(60)'"


def stub_command(tmp_path: Path) -> str:
    link = tmp_path / "triton_python_backend_stub"
    link.symlink_to(sys.executable)
    return f"{link} -c {IGNORE_SIGTERM}"


def test_an_orphaned_stub_is_killed_at_once_and_named_not_waited_for(tmp_path):
    # its parent (the stand-in tritonserver) exits at once: the stub is left in the leader's session, orphaned
    leader = f": prefect worker stand-in; bash -c \"{stub_command(tmp_path)} &\"; echo up; sleep 60 & wait"
    proc = subprocess.Popen(["bash", "-c", leader], start_new_session=True, stdout=subprocess.PIPE, text=True)
    try:
        assert {proc.stdout.readline(), proc.stdout.readline()} == {"1\n", "up\n"}
        pid_file = tmp_path / "worker.pid"
        pid_file.write_text(f"{proc.pid}\n")
        t0 = time.monotonic()
        message = stop_services.stop(pid_file, timeout_s=10)
        assert time.monotonic() - t0 < 5, message  # not the 10 s a process ignoring SIGTERM would cost
        assert "(SIGTERM; SIGKILL to orphaned Triton stubs, which ignore SIGTERM: " in message, message
        assert "SIGKILL after SIGTERM" not in message
    finally:
        proc.kill()
        proc.wait()


def test_a_stub_whose_tritonserver_runs_is_left_to_it(tmp_path):
    (tmp_path / "tritonserver").symlink_to("/bin/bash")  # the process's name is its server's
    server = subprocess.Popen([str(tmp_path / "tritonserver"), "-c", f"{stub_command(tmp_path)} & wait"],
                              stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert server.stdout.readline() == "1\n"
        [stub] = stop_services.psutil.Process(server.pid).children()
        assert stop_services.kill_orphaned_stubs([stub]) == [] and stub.is_running()
        server.kill()
        server.wait()
        assert stop_services.kill_orphaned_stubs([stub]) == [f"{stub.pid} triton_python_backend_stub"]
    finally:
        server.kill()
        subprocess.run(["pkill", "-9", "-s", str(server.pid)], check=False)
