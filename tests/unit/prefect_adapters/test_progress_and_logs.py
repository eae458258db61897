"""Progress artifacts and specops' log lines as a real Prefect API receives them (a test harness server)."""
from __future__ import annotations

import asyncio
import logging
import threading
import warnings

from prefect import flow, task
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import (
    ArtifactFilter,
    ArtifactFilterFlowRunId,
    ArtifactFilterId,
    LogFilter,
    LogFilterFlowRunId,
)
from prefect.logging.handlers import APILogHandler, APILogWorker

from prefect_adapters.progress_artifacts import ProgressArtifact
from prefect_adapters.step import forward_specops_logs


def read(coroutine_fn):
    async def go():
        async with get_client() as client:
            return await coroutine_fn(client)

    return asyncio.run(go())


def artifacts_of(flow_run_id):
    return read(lambda c: c.read_artifacts(
        artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id]))))


def test_reports_from_a_thread_without_context_update_one_artifact_to_the_end(harness):
    seen = {}

    @task
    def step() -> str:
        progress = ProgressArtifact("toy step", min_interval_s=3600)
        # As a tool's output reader does: a plain thread, none of the task's context variables.
        reader = threading.Thread(target=lambda: [progress.report(i / 200, f"line {i}") for i in range(1, 150)])
        reader.start()
        reader.join()
        [seen["mid"]] = read(lambda c: c.read_artifacts(
            artifact_filter=ArtifactFilter(id=ArtifactFilterId(any_=[progress.id]))))
        progress.done("finished")
        return str(progress.id)

    @flow
    def toy() -> str:
        return step()

    state = toy(return_state=True)
    flow_run_id = state.state_details.flow_run_id
    assert seen["mid"].data == 0.5 and seen["mid"].description == "toy step: line 1"  # the first; the rest throttled
    [artifact] = artifacts_of(flow_run_id)
    assert (artifact.type, artifact.data, artifact.description) == ("progress", 100.0, "toy step: finished")
    assert artifact.task_run_id is not None


def test_specops_log_lines_reach_the_flow_runs_logs_and_threads_are_dropped_quietly(harness):
    forward_specops_logs()

    @task
    def step() -> None:
        logging.getLogger("specops.backends.triton_server").info("tritonserver ready in 1.0s (unit test)")
        with warnings.catch_warnings(record=True) as caught:  # Prefect's handler warns of each record without a run
            warnings.simplefilter("always")
            thread = threading.Thread(target=lambda: logging.getLogger("specops.host.liveness").info("from a thread"))
            thread.start()
            thread.join()
        assert [str(w.message) for w in caught if "flow run" in str(w.message)] == []

    @flow
    def toy() -> None:
        step()

    flow_run_id = toy(return_state=True).state_details.flow_run_id
    APILogWorker.drain_all(timeout=30)
    logs = read(lambda c: c.read_logs(LogFilter(flow_run_id=LogFilterFlowRunId(any_=[flow_run_id]))))
    mine = [(log.name, log.message) for log in logs if log.name.startswith("specops")]
    assert mine == [("specops.backends.triton_server", "tritonserver ready in 1.0s (unit test)")]
    assert [log.task_run_id for log in logs if log.name.startswith("specops")] != [None]


def test_forwarding_is_set_up_once_at_info():
    import tasks.report  # noqa: F401  (importing the flow's task modules sets it up)

    logger = forward_specops_logs()
    forward_specops_logs()
    assert logger.getEffectiveLevel() == logging.INFO
    assert sum(isinstance(h, APILogHandler) for h in logger.handlers) == 1
