"""How a stop of tritonserver is logged: a stop we asked for reads as "stopped" at INFO, whichever way a stop
ends (0; 1 after "Exit timeout expired", tritonserver's exit when a model outlives --exit-timeout-secs;
SIGKILL after SIGTERM was ignored), and any other exit as a WARNING with the log's tail. The process is a
STAND-IN shell that exits as tritonserver would on SIGTERM (no tritonserver needed to choose the line)."""
from __future__ import annotations

import logging
import subprocess
import time

import pytest

from specops.backends.triton_server import TritonServer
from specops.host.processes import pick_free_ports

TIMEOUT_LINE = 'E1126 main.cc:535] "failed to stop server: Internal - Exit timeout expired. Exiting immediately."'


def stop(tmp_path, caplog, on_sigterm: str, log_text: str = "") -> list[logging.LogRecord]:
    (tmp_path / "repo").mkdir(exist_ok=True)
    server = TritonServer(tmp_path / "repo", tmp_path / "triton.log", models=[])
    server.log_file.write_text(f"# specops launch 1\n{log_text}\n")
    server._proc = subprocess.Popen(["bash", "-c", f"trap '{on_sigterm}' TERM; echo up; sleep 30 & wait"],
                                    start_new_session=True, stdout=subprocess.PIPE)
    server._proc.stdout.readline()  # the trap is set
    server._ports = tuple(pick_free_ports("127.0.0.1", 3))
    with caplog.at_level(logging.INFO, logger="specops.backends.triton_server"):
        server.stop(timeout_s=1.5)
    return [r for r in caplog.records if r.name == "specops.backends.triton_server" and "tritonserver pid" in r.getMessage()]


@pytest.mark.parametrize("on_sigterm, log_text, says", [
    ("exit 0", "", "stopped in"),
    ("exit 1", TIMEOUT_LINE, "exit timeout: tritonserver exits 1 then"),
    ("", "", "SIGKILL: it outlived SIGTERM"),  # the trap ignores SIGTERM: SIGKILL after the bound
])
def test_a_stop_we_asked_for_is_logged_as_stopped(tmp_path, caplog, on_sigterm, log_text, says):
    t0 = time.monotonic()
    records = stop(tmp_path, caplog, on_sigterm, log_text)
    assert [r.levelno for r in records] == [logging.INFO] and says in records[0].getMessage()
    assert "exit 1" not in records[0].getMessage() and time.monotonic() - t0 < 10


@pytest.mark.parametrize("on_sigterm, log_text", [("exit 1", "E1126 some other failure"), ("exit 3", TIMEOUT_LINE)])
def test_another_exit_is_a_warning_with_the_log(tmp_path, caplog, on_sigterm, log_text):
    records = stop(tmp_path, caplog, on_sigterm, log_text)
    assert [r.levelno for r in records] == [logging.WARNING]
    assert f"exited {on_sigterm.split()[1]} when stopped" in records[0].getMessage()
    assert log_text in records[0].getMessage()
