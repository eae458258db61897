"""tasks/report.publish_artifacts on a real Prefect API (a test harness server): a run of its own keeps the
profile's keys, a member of a compare flow (its subflow tagged) gets keys of its own; the report embeds its
plot over SPECOPS_ARTIFACTS_URL and the table is rounded."""
from __future__ import annotations

import asyncio
import json

import pytest
from prefect import flow, tags
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId
from prefect.testing.utilities import prefect_test_harness

from specops.report.writer import write_report
from specops.results.role import COMPARE, RunRole
from tasks.report import publish_artifacts
from tests.results_factory import run_result

URL = "http://bench-1:4201"


@pytest.fixture(scope="module")
def harness():
    with prefect_test_harness(server_startup_timeout=120):
        yield


def artifacts_by_key(flow_run_ids) -> dict:
    async def go():
        async with get_client() as client:
            return await client.read_artifacts(
                artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=list(flow_run_ids))))

    return {a.key: a for a in asyncio.run(go())}


def test_a_runs_own_keys_and_a_compare_members_keys(harness, tmp_path, monkeypatch):
    monkeypatch.setenv("SPECOPS_ARTIFACTS", str(tmp_path))
    monkeypatch.setenv("SPECOPS_ARTIFACTS_URL", URL)
    result = run_result()
    run_dir = tmp_path / "ngram-local" / result.run_id
    result = result.model_copy(update={"run_dir": str(run_dir)})
    files = write_report(result, run_dir)
    ids = []

    @flow(name="specdec")
    def member(record) -> None:
        from prefect.runtime import flow_run

        ids.append(flow_run.id)
        publish_artifacts(record, files)

    @flow(name="compare")
    def compare() -> None:
        with tags(COMPARE):  # a label for people: the role names the member's keys
            member(result.model_copy(update={"role": RunRole(kind=COMPARE), "draft_length": 4}))

    member(result)
    own = artifacts_by_key(ids)
    assert set(own) == {"ngram-local-report", "ngram-local-comparison", "ngram-local-run-dir"}
    assert f"![comparison.png]({URL}/ngram-local/{result.run_id}/comparison.png)" in own["ngram-local-report"].data
    assert own["ngram-local-run-dir"].data.endswith(f"({URL}/ngram-local/{result.run_id}/)")
    table = json.loads(own["ngram-local-comparison"].data)
    assert table[0]["speedup (95%)"] == "1.36x (1.31-1.41)" and table[0]["tokens/s"] == "21.80"  # as people read it

    compare()
    members = artifacts_by_key(ids[1:])
    assert set(members) == {"compare-ngram-local-report", "compare-ngram-local-comparison",
                            "compare-ngram-local-run-dir"}
    assert members["compare-ngram-local-report"].description.startswith("ngram-local - K=")
    assert "(compare member)" in members["compare-ngram-local-report"].data.splitlines()[0]
