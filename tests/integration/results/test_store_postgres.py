"""The results store against a real PostgreSQL 15: the same behaviours as on SQLite, plus concurrent writers."""
from __future__ import annotations

import math
import threading

import pytest
import sqlalchemy as sa
from alembic import command
from sqlalchemy.dialects import postgresql

from specops.results.database import alembic_config, create_engine, current_revision, head_revision, migrate
from specops.results.model import Status
from specops.results.store import AmbiguousRun, ResultsError, ResultsStore, RunNotFound, runs
from tests.results_factory import T0, append_from_processes, run_result

pytestmark = pytest.mark.integration


def test_open_migrates_to_head_with_a_jsonb_record(postgres_url):
    with ResultsStore.open(postgres_url) as store:
        assert current_revision(store.engine) == head_revision()
        inspector = sa.inspect(store.engine)
        types = {c["name"]: c["type"] for c in inspector.get_columns("runs")}
        assert isinstance(types["result"], postgresql.JSONB)
        assert ("profile", "started_at") in {tuple(i["column_names"]) for i in inspector.get_indexes("runs")}
    with ResultsStore.open(postgres_url) as again:  # a second open finds it at head and changes nothing
        assert current_revision(again.engine) == head_revision()


def test_bare_postgresql_url_opens_with_psycopg(postgres_url):
    with ResultsStore.open(postgres_url.replace("postgresql+psycopg://", "postgresql://")) as store:
        assert store.engine.dialect.driver == "psycopg"


def test_append_get_history(fresh_postgres_url):
    ok = run_result(started_at=T0 + 120)
    failed = run_result(status=Status.FAILED, started_at=T0 + 60, profile="eagle3-vllm")
    invalid = run_result(status=Status.INVALID, started_at=T0)
    with ResultsStore.open(fresh_postgres_url) as store:
        for result in (invalid, ok, failed):
            store.append(result)
        assert store.get(ok.uid) == ok
        assert store.get(failed.run_id) == failed
        assert store.get(invalid.uid[:8]) == invalid
        assert [r.uid for r in store.history()] == [ok.uid, failed.uid, invalid.uid]
        assert [r.uid for r in store.history("eagle3-vllm")] == [failed.uid]
        assert [r.uid for r in store.history(limit=1)] == [ok.uid]
        with store.engine.connect() as conn:
            row = conn.execute(sa.select(runs).where(runs.c.uid == failed.uid)).one()
            assert (row.status, row.speedup) == ("failed", None)
            # the record is queryable as JSONB, not a string
            status = conn.execute(sa.text("SELECT result->>'status' FROM runs WHERE uid = :u"), {"u": ok.uid})
            assert status.scalar_one() == "ok"


def test_prefix_ambiguity_and_missing_runs(fresh_postgres_url):
    with ResultsStore.open(fresh_postgres_url) as store:
        store.append(run_result(uid="abcdef01" + "0" * 24))
        store.append(run_result(uid="abcdef02" + "0" * 24))
        with pytest.raises(AmbiguousRun, match="abcdef01.*\n.*abcdef02|abcdef02.*\n.*abcdef01"):
            store.get("abcdef0")
        with pytest.raises(RunNotFound):
            store.get("abcd_f")  # `_` is not a wildcard
        with pytest.raises(RunNotFound, match="at least 6"):
            store.get("abc")


def test_reappend_updates_and_non_finite_floats_survive_jsonb(fresh_postgres_url):
    first = run_result(speedup=1.2)
    retried = run_result(uid=first.uid, run_id=first.run_id, speedup=1.4)
    retried = retried.model_copy(update={"speedup": retried.speedup.model_copy(update={"throughput_ratio": math.nan})})
    with ResultsStore.open(fresh_postgres_url) as store:
        store.append(first)
        store.append(retried)
        [back] = store.history()
        assert back.speedup.point == 1.4 and math.isnan(back.speedup.throughput_ratio)


def test_a_database_at_0001_is_upgraded_and_migrations_reverse(fresh_postgres_url):
    engine = create_engine(fresh_postgres_url)
    migrate(engine, "0001")
    old = run_result()
    with engine.begin() as conn:
        conn.execute(sa.insert(runs).values(
            uid=old.uid, run_id=old.run_id, profile=old.profile, status="ok", verdict="VALID", method="ngram",
            backend="local", started_at=old.started_at, finished_at=old.finished_at, schema_version=1,
            result=old.model_dump(mode="json")))
    with ResultsStore.open(fresh_postgres_url) as store:
        assert store.get(old.uid) == old
        with store.engine.connect() as conn:
            assert conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalar_one() == head_revision()
    with engine.begin() as conn:  # the downgrade path exists and works on PostgreSQL too
        config = alembic_config()
        config.attributes["connection"] = conn
        command.downgrade(config, "base")
    assert "runs" not in sa.inspect(engine).get_table_names()
    engine.dispose()


def test_a_wrong_database_name_is_reported_without_the_password(postgres_server):
    url = postgres_server.replace("specops@", "specops:secret@") + "no_such_db"
    with pytest.raises(ResultsError, match="does not exist") as failure:
        ResultsStore.open(url)
    assert "secret" not in str(failure.value) and "specops:***@127.0.0.1" in str(failure.value)


def test_two_threads_append_concurrently(fresh_postgres_url):
    with ResultsStore.open(fresh_postgres_url) as store:
        def append_many(tag: str) -> None:
            for i in range(20):
                store.append(run_result(uid=f"{tag}{i:02d}".ljust(32, "0"), started_at=T0 + i))
                store.append(run_result(uid=f"shared{i:02d}".ljust(32, "0"), started_at=T0 + i))  # same uids

        threads = [threading.Thread(target=append_many, args=(tag,)) for tag in ("aa", "bb")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert len(store.history(limit=1000)) == 60


def test_two_processes_open_a_new_database_and_append_concurrently(fresh_postgres_url, tmp_path):
    outcomes = append_from_processes(fresh_postgres_url, ["pa", "pb"], tmp_path)
    assert [code for code, _ in outcomes] == [0, 0], outcomes
    with ResultsStore.open(fresh_postgres_url) as store:
        results = store.history(limit=1000)
        assert len(results) == 60
        assert {r.profile for r in results if r.uid.startswith("shared")} <= {"pa", "pb"}
        with store.engine.connect() as conn:
            assert conn.execute(sa.text("SELECT count(*) FROM alembic_version")).scalar_one() == 1
