"""Rows written by a newer specops, on the real databases: history, trend and compare go on, and say so once.

A worker fleet upgraded one host at a time shares one results database: the older hosts must keep
reading it. See specops/results/compat.py for the policy.
"""
from __future__ import annotations

import pytest

from specops.results.store import ResultsStore
from tests.integration.faults.support import specops
from tests.integration.support import service_env
from tests.results_factory import T0, insert_future_rows, run_result

pytestmark = pytest.mark.integration


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'results.db'}"
    return request.getfixturevalue("fresh_postgres_url")


def test_history_trend_and_compare_read_past_a_newer_specops_rows(database, tmp_path):
    with ResultsStore.open(database) as store:
        for i in range(3):
            store.append(run_result(run_id=f"ours-{i}", started_at=T0 + 60 * i))
        newer, retyped = insert_future_rows(store)
    env = service_env(tmp_path, SPECOPS_RESULTS_URL=database)

    history = specops(env, "history", "ngram-local")
    assert history.returncode == 0, history.stderr
    assert newer in history.stdout and "ours-0" in history.stdout and retyped not in history.stdout
    warnings = [line for line in history.stderr.splitlines() if line.startswith("specops: warning:")]
    assert len(warnings) == 2, history.stderr
    assert newer in warnings[0] and "energy_budget_j" in warnings[0]
    assert retyped in warnings[1] and "skipped" in warnings[1] and "upgrade specops" in warnings[1]

    trend = specops(env, "history", "ngram-local", "--trend")
    assert trend.returncode == 0, trend.stderr
    assert "ngram-local: 4 runs" in trend.stdout, trend.stdout  # three of ours and the newer one, read in part

    compare = specops(env, "compare", newer, "ours-0")
    assert compare.returncode == 0, compare.stderr
    assert newer in compare.stdout and "energy_budget_j" in compare.stderr
    unreadable = specops(env, "compare", retyped, "ours-0")
    assert unreadable.returncode != 0 and "Traceback" not in unreadable.stderr
    assert f"run {retyped}" in unreadable.stderr and "written by a newer specops" in unreadable.stderr
