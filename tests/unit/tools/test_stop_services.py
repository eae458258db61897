"""tools/stop_services.py stops a `make up` session leader's processes before the leader: a STAND-IN leader
that, as Prefect 3.9's worker does when it stops, kills its child outright, and a STAND-IN flow run that ends
cleanly on its one SIGTERM (writes a file). Stopped in that order, the child ends cleanly, all on SIGTERM."""
from __future__ import annotations

import importlib.util
import subprocess
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
