"""The results store on SQLite: what it keeps, how runs are found, and how its schema is upgraded."""
from __future__ import annotations

import math
import threading
import traceback

import pytest
import sqlalchemy as sa

from specops.results.database import create_engine, current_revision, engine_url, head_revision, migrate, results_url
from specops.results.model import Status
from specops.results.store import AmbiguousRun, ResultsError, ResultsStore, RunNotFound, runs
from tests.results_factory import T0, append_from_processes, run_result


@pytest.fixture
def url(tmp_path):
    return f"sqlite:///{tmp_path / 'db' / 'results.db'}"


@pytest.fixture
def store(url):
    with ResultsStore.open(url) as opened:
        yield opened


def test_default_url_is_sqlite_under_artifacts_root(monkeypatch, tmp_path):
    monkeypatch.delenv("SPECOPS_RESULTS_URL", raising=False)
    monkeypatch.setenv("SPECOPS_ARTIFACTS", str(tmp_path / "art"))
    assert results_url() == f"sqlite:///{tmp_path}/art/results.db"
    with ResultsStore.open() as store:
        store.append(run_result())
    assert (tmp_path / "art" / "results.db").is_file()
    monkeypatch.setenv("SPECOPS_RESULTS_URL", "postgresql://u@db.example/specops")
    assert results_url() == "postgresql://u@db.example/specops"


def test_bare_postgresql_urls_use_psycopg():
    assert engine_url("postgresql://u:p@h/db").drivername == "postgresql+psycopg"
    assert engine_url("postgresql+psycopg://u:p@h/db").drivername == "postgresql+psycopg"
    assert engine_url("sqlite:///x.db").drivername == "sqlite"


def test_open_migrates_a_new_file_to_head(url):
    with ResultsStore.open(url) as store:
        assert current_revision(store.engine) == head_revision() == "0001"
        inspector = sa.inspect(store.engine)
        columns = {c["name"] for c in inspector.get_columns("runs")}
        indexes = {tuple(i["column_names"]) for i in inspector.get_indexes("runs")}
    assert {"uid", "run_id", "profile", "status", "verdict", "speedup", "speedup_low", "speedup_high",
            "schema_version", "result", "started_at", "finished_at", "method", "backend"} <= columns
    assert ("profile", "started_at") in indexes


def test_append_then_get_returns_the_same_record(store):
    result = run_result()
    store.append(result)
    assert store.get(result.uid) == result
    assert store.get(result.run_id) == result


def test_failed_and_invalid_runs_are_kept_with_empty_speedup_columns(store):
    failed = run_result(status=Status.FAILED, started_at=T0 + 1)
    invalid = run_result(status=Status.INVALID, started_at=T0 + 2)
    store.append(failed)
    store.append(invalid)
    assert store.get(failed.uid).failure.step == "serve"
    assert store.get(invalid.uid).verdict.value == "INVALID"
    with store.engine.connect() as conn:
        row = conn.execute(sa.select(runs).where(runs.c.uid == failed.uid)).one()
    assert (row.status, row.verdict, row.speedup, row.speedup_low, row.speedup_high) == (
        "failed", "FAILED", None, None, None)


def test_history_is_newest_first_filtered_and_limited(store):
    order = [3, 1, 4, 0, 2]
    results = {i: run_result(started_at=T0 + 60 * i, profile="eagle3-vllm" if i % 2 else "ngram-local")
               for i in order}
    for i in order:
        store.append(results[i])
    assert [r.uid for r in store.history()] == [results[i].uid for i in (4, 3, 2, 1, 0)]
    assert [r.uid for r in store.history("eagle3-vllm")] == [results[3].uid, results[1].uid]
    assert [r.uid for r in store.history(limit=2)] == [results[4].uid, results[3].uid]
    assert store.history("no-such-profile") == []


def test_uid_prefix_finds_one_run_and_lists_candidates_when_ambiguous(store):
    first, second = run_result(uid="abcdef01" + "0" * 24), run_result(uid="abcdef02" + "0" * 24, started_at=T0 + 1)
    store.append(first)
    store.append(second)
    assert store.get("abcdef01").uid == first.uid
    with pytest.raises(AmbiguousRun) as ambiguous:
        store.get("abcdef0")
    assert first.uid in str(ambiguous.value) and second.uid in str(ambiguous.value)
    with pytest.raises(RunNotFound, match="at least 6 characters"):
        store.get("abcde")  # matches both, but too short to be taken as a prefix
    with pytest.raises(RunNotFound, match="'ffffff'"):
        store.get("ffffff")


def test_prefix_characters_are_not_wildcards(store):
    store.append(run_result(uid="abcdef01" + "0" * 24))
    with pytest.raises(RunNotFound):
        store.get("abcd%f")
    with pytest.raises(RunNotFound):
        store.get("abcde_0")


def test_appending_a_uid_again_updates_its_row(store):
    first = run_result(speedup=1.2)
    store.append(first)
    retried = run_result(uid=first.uid, run_id=first.run_id, speedup=1.5)
    store.append(retried)
    assert len(store.history()) == 1
    assert store.get(first.uid).speedup.point == 1.5
    with store.engine.connect() as conn:
        assert conn.execute(sa.select(runs.c.speedup, runs.c.speedup_high)).one() == (1.5, 1.55)


def test_the_write_probe_leaves_no_row_behind(store):
    """check_writable writes a row and rolls it back: a committed probe would show in history and trends."""
    store.check_writable()
    store.check_writable()
    with store.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(runs)).scalar_one() == 0


def test_non_finite_floats_round_trip(store):
    result = run_result()
    odd = result.model_copy(update={"speedup": result.speedup.model_copy(update={"throughput_ratio": float("nan")}),
                                    "phases": result.phases.model_copy(update={"wall_s": float("inf")})})
    store.append(odd)
    back = store.get(odd.uid)
    assert math.isnan(back.speedup.throughput_ratio) and back.phases.wall_s == math.inf


def test_runs_survive_reopening(url):
    result = run_result()
    with ResultsStore.open(url) as store:
        store.append(result)
    with ResultsStore.open(url) as store:
        assert store.get(result.uid) == result
        assert current_revision(store.engine) == head_revision()


def test_a_database_at_revision_0001_is_upgraded_on_open_and_keeps_its_rows(url):
    engine = create_engine(url)
    migrate(engine, "0001")
    assert current_revision(engine) == "0001"
    old = run_result()
    with engine.begin() as conn:  # a row as specops at 0001 wrote it
        conn.execute(sa.insert(runs).values(
            uid=old.uid, run_id=old.run_id, profile=old.profile, status="ok", verdict="VALID", method="ngram",
            backend="local", started_at=old.started_at, finished_at=old.finished_at, schema_version=1,
            result=old.model_dump(mode="json")))
    engine.dispose()
    with ResultsStore.open(url) as store:
        assert current_revision(store.engine) == head_revision()
        with store.engine.connect() as conn:
            assert conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalar_one() == head_revision()
        assert store.get(old.uid) == old


def test_a_database_from_a_newer_specops_is_refused_clearly(url):
    with ResultsStore.open(url) as store, store.engine.begin() as conn:
        conn.execute(sa.text("UPDATE alembic_version SET version_num = '9999'"))
    with pytest.raises(ResultsError, match="newer specops"):
        ResultsStore.open(url)


def test_the_password_never_appears_in_an_open_error():
    with pytest.raises(ResultsError) as failure:
        ResultsStore.open("postgresql://u:secret@127.0.0.1:1/x")
    message = str(failure.value)
    assert "u:***@127.0.0.1:1/x" in message and "SPECOPS_RESULTS_URL" in message
    chain, error = [], failure.value
    while error is not None:  # the message and every exception it was raised from or during
        chain += traceback.format_exception_only(error)
        error = error.__cause__ or error.__context__
    assert len(chain) > 1 and "secret" not in "".join(chain)


def test_a_url_that_is_no_url_is_refused_without_echoing_it():
    with pytest.raises(ResultsError, match="not a database URL") as failure:
        ResultsStore.open("hunter2-not-a-url")
    assert "hunter2" not in str(failure.value)


def test_appends_from_two_threads_all_land(store):
    def append_many(offset: int) -> None:
        for i in range(15):
            store.append(run_result(uid=f"{offset:02d}{i:02d}" + "0" * 28, started_at=T0 + offset * 100 + i))

    threads = [threading.Thread(target=append_many, args=(offset,)) for offset in (1, 2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(store.history(limit=100)) == 30


def test_two_processes_open_a_new_file_and_append_at_once(url, tmp_path):
    """Without writers taking SQLite's write lock up front, two transactions that both read then
    write deadlock, and SQLite fails one at once ("database is locked") instead of waiting. The
    window is the migration of a new file, so this catches a regression some of the time, not always."""
    outcomes = append_from_processes(url, ["pa", "pb"], tmp_path)
    assert [code for code, _ in outcomes] == [0, 0], outcomes
    with ResultsStore.open(url) as store:
        assert len(store.history(limit=100)) == 60


def test_a_schema_1_record_loads_and_newer_records_never_stop_history_or_compare(store):
    from specops.results.compat import ReadNotes
    from specops.results.model import SCHEMA_VERSION
    from specops.results.store import _row

    old = run_result(run_id="old-run", started_at=T0).model_dump(mode="json")
    old.pop("window")  # a field schema 1 did not have
    newer = run_result(run_id="newer-run", started_at=T0 + 1).model_dump(mode="json")
    newer.update(schema_version=SCHEMA_VERSION + 1, a_later_field=1)
    changed = run_result(run_id="changed-run", started_at=T0 + 2).model_dump(mode="json")
    changed.update(schema_version=SCHEMA_VERSION + 1, status="paused")
    rows = [_row(run_result(run_id=d["run_id"], started_at=d["started_at"])) | {"uid": d["uid"], "result": d,
            "schema_version": d.get("schema_version", 1)} for d in (old | {"schema_version": 1}, newer, changed)]
    with store.engine.begin() as conn:
        conn.execute(runs.insert(), rows)
    notes = ReadNotes()
    listed = store.history(notes=notes)
    assert [r.run_id for r in listed] == ["newer-run", "old-run"]
    assert listed[1].window is None and listed[0].schema_version == SCHEMA_VERSION + 1
    assert len(notes.partial) == 1 and "newer-run" in notes.partial[0] and "a_later_field" in notes.partial[0]
    assert len(notes.skipped) == 1 and "changed-run" in notes.skipped[0] and "status" in notes.skipped[0]
    assert store.get("newer-run").run_id == "newer-run"  # compare shows what it understands
    with pytest.raises(ResultsError, match=rf"run changed-run .*record schema {SCHEMA_VERSION + 1}\) cannot be "
                                           rf"shown by this specops: written by a newer specops"):
        store.get("changed-run")
