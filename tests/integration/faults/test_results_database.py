"""The results database's faults on the real stack: nothing measured is lost.

A PostgreSQL that is down at the start refuses the run before any download (exit 4, naming it); one
that stops while the run benchmarks costs only the append: the run ends with its verdict, its result
in manifest.json and a pointer, and `specops results import` records it once the server is back. An
SQLite file that cannot be written, or is not a database, is refused at the start with what to do
about a file (not a server).
"""
from __future__ import annotations

import json
import subprocess
import time

import pytest

from tests.integration.faults.support import SHRINK, specops, start_run, wait_for_processes
from tests.integration.postgres import create_database, own_postgres
from tests.integration.support import service_env

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _one_message(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert "Traceback" not in stderr and "unexpected" not in stderr, stderr
    return "\n".join(lines)


def test_postgresql_down_at_the_start_refuses_the_run_before_any_download(tmp_path):
    with own_postgres() as pg:
        url = create_database(pg.server_url)
        pg.stop()
        env = service_env(tmp_path, SPECOPS_RESULTS_URL=url)
        start = time.monotonic()
        done = specops(env, "run", "ngram-local", *[a for s in SHRINK for a in ("--set", s)])
        took = time.monotonic() - start
    message = _one_message(done.stderr)
    print(f"PostgreSQL down: exit {done.returncode} after {took:.1f}s: {message}")
    assert done.returncode == 4, done.stderr
    assert f"cannot open the results database at {url}" in message and "server is running" in message
    assert not (tmp_path / "artifacts" / "ngram-local").exists()  # no run directory, nothing downloaded


def test_postgresql_stopped_mid_run_costs_only_the_append(embedded_model, tmp_path):
    with own_postgres() as pg:
        url = create_database(pg.server_url)
        # One server (no base arm): the fault is in the database, not in what is measured.
        run = start_run(tmp_path, [*SHRINK, "comparison.baseline=false"], run_id="db-lost", SPECOPS_RESULTS_URL=url)
        try:
            wait_for_processes(run, {"genai-perf", "perf_analyzer"}, timeout_s=600)
            pg.stop()
            stopped = time.monotonic()
            rc = run.proc.wait(timeout=600)
            ended = time.monotonic() - stopped
        finally:
            run.stop()
        output = run.tail(20000)
        assert rc == 0, output
        status = json.loads((run.run_dir / "status.json").read_text())
        assert status["state"] == "ok", status
        manifest = json.loads((run.run_dir / "manifest.json").read_text())
        assert manifest["verdict"] == "UNCHECKED" and (run.run_dir / "report.md").is_file()
        assert f"specops results import {run.run_dir}" in output, output
        pointers = list((tmp_path / "artifacts" / ".unrecorded").glob("*.json"))
        assert [p.stem for p in pointers] == [manifest["uid"]]
        print(f"PostgreSQL stopped during the benchmark: the run ended {ended:.1f}s later, exit {rc}, status ok, "
              f"result kept in {run.run_dir / 'manifest.json'}")

        pg.start()
        env = service_env(tmp_path, SPECOPS_RESULTS_URL=url)
        before = specops(env, "history", "ngram-local")
        assert "db-lost" not in before.stdout, before.stdout
        imported = specops(env, "results", "import", str(run.run_dir))
        assert imported.returncode == 0, imported.stderr
        assert f"recorded ngram-local run db-lost ({manifest['uid'][:12]}, UNCHECKED)" in imported.stdout
        after = specops(env, "history", "ngram-local")
        assert after.returncode == 0 and "db-lost" in after.stdout, after.stdout + after.stderr
        assert not list((tmp_path / "artifacts" / ".unrecorded").glob("*.json"))  # the pointer went with it


@pytest.mark.parametrize("fault", ["read-only", "corrupt"])
def test_an_unusable_sqlite_file_is_refused_at_the_start_naming_the_file(fault, tmp_path):
    db = tmp_path / "results.db"
    env = service_env(tmp_path, SPECOPS_RESULTS_URL=f"sqlite:///{db}")
    if fault == "corrupt":
        db.write_bytes(b"this is not an SQLite database\n" * 100)
    else:
        assert specops(env, "history").returncode == 0  # creates the file at the current schema
        subprocess.run(["chattr", "+i", str(db)], check=True)  # root ignores permission bits; not this
    try:
        start = time.monotonic()
        done = specops(env, "run", "ngram-local", *[a for s in SHRINK for a in ("--set", s)])
        took = time.monotonic() - start
    finally:
        subprocess.run(["chattr", "-i", str(db)], check=False)
    message = _one_message(done.stderr)
    print(f"SQLite {fault}: exit {done.returncode} after {took:.1f}s: {message}")
    assert done.returncode == 4, done.stderr
    assert str(db) in message and "server" not in message and "INSERT" not in message
    want = "cannot be written (attempt to write a readonly database)" if fault == "read-only" else \
        "is not a readable SQLite database (file is not a database)"
    assert want in message, message
    assert len(message) < 600, message
    assert not (tmp_path / "artifacts" / "ngram-local").exists()
