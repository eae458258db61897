"""Concurrent runs make a store entry once: one produces under the entry's lock, the others wait and hit."""
from __future__ import annotations

import logging
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from specops.sources.entry_lock import lock_path, produce_once

# produce_once: the store's only cache lock. Processes that want one entry make it once.
_PRODUCER = """
import sys, time
from pathlib import Path
from specops.sources.entry_lock import produce_once

entry, hold = Path(sys.argv[1]), float(sys.argv[2])

def produce():
    print("producing", flush=True)
    with (entry.parent / "produced").open("a") as fh:
        fh.write("x")
    time.sleep(hold)
    entry.mkdir()

print("hit" if produce_once(entry, entry.is_dir, produce) else "miss", flush=True)
"""


def _producer(entry, hold_s):
    return subprocess.Popen([sys.executable, "-c", _PRODUCER, str(entry), str(hold_s)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parents[3])


def test_processes_producing_one_entry_produce_it_once_and_the_waiters_hit(tmp_path):
    entry = tmp_path / "repos" / "key"
    entry.parent.mkdir()
    procs = [_producer(entry, 1.0) for _ in range(3)]
    outs = [proc.communicate(timeout=60)[0].split() for proc in procs]
    assert (entry.parent / "produced").read_text() == "x"
    assert sorted(out[-1] for out in outs) == ["hit", "hit", "miss"]
    assert produce_once(entry, entry.is_dir, lambda: pytest.fail("produced a complete entry again"))


def test_a_killed_producer_does_not_block_and_its_waiter_says_whom_it_waited_for(tmp_path, caplog):
    entry = tmp_path / "repos" / "key"
    entry.parent.mkdir()
    holder = _producer(entry, 120)
    try:
        assert holder.stdout.readline() == "producing\n"
        threading.Timer(1.0, holder.kill).start()
        with caplog.at_level(logging.INFO, logger="specops.cache"):
            assert not produce_once(entry, entry.is_dir, entry.mkdir)  # the dead run made nothing: we make it
    finally:
        holder.kill()
        holder.wait()
    assert holder.returncode == -signal.SIGKILL and entry.is_dir()
    assert f"waiting for {lock_path(entry)}: pid {holder.pid} on {socket.gethostname()} (since " in caplog.text
    assert lock_path(entry).read_text() == ""  # released: it names nobody
