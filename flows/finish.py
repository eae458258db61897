"""A finished run's record: its RunResult, database row, report files, Prefect artifacts and run-directory status;
and how a flow of several runs ends when none of them measured.

Shared by the specdec flow (a run) and the sweep flow (each of its cells); the compare, calibrate and upgrade flows
end with table_or_failed.
"""
from __future__ import annotations

import contextlib
import logging
from pathlib import Path
from typing import NamedTuple

from prefect.states import Failed, State

from specops.host import tracking
from specops.pipeline.summarize import ended_failed
from specops.results.model import Failure, RunResult
from specops.run.rundir import RunDir
from tasks.report import publish_artifacts, record_result, save_result, write_report

log = logging.getLogger(__name__)
REPORT_STEP = "report"


class Finished(NamedTuple):
    result: RunResult  # as the run ended: FAILED at report when its report could not be written
    report: Path | None  # report.md, None when it could not be written
    error: Exception | None  # why not


def finish(result: RunResult, run: RunDir) -> Finished:
    """The RunResult into the run directory and the database first (what was measured is kept whatever follows),
    then the report files and the Prefect artifacts rendered from it. A report that cannot be written (a full disk)
    ends the run FAILED at report: its manifest and row are written again to say so, so none says ok."""
    with run.timed(REPORT_STEP, "results"):  # status.json names the step: a run killed here ends failed at it
        try:
            try:
                save_result(result, run)
            finally:  # the database may well be on a disk that is not full
                record_result(result)
            files = write_report(result, run)
        except Exception as error:
            ended = ended_failed(result, Failure(step=REPORT_STEP, error=f"{type(error).__name__}: {error}"))
            with contextlib.suppress(OSError):  # the disk that refused the report may refuse this too
                save_result(ended, run)
            record_result(ended)  # the same uid: the row is replaced, not doubled
            return Finished(ended, None, error)
        publish_artifacts(result, files)
    return Finished(result, files.report_md, None)


def set_final_status(run: RunDir, result: RunResult) -> None:
    """The run's status from its result; nothing left for a janitor to finish (a sweep cell has no record). A disk
    that refuses status.json as well is logged: the run's own error is the one that reaches the user."""
    f = result.failure
    try:
        run.set_status(result.status.value, f.step if f else None, f.variant if f else None, f.error if f else None)
    except OSError as exc:
        log.error("status.json could not say how the run ended (%s): %s", result.status.value, exc)
    tracking.untrack_run(run.path)


class NoneMeasured(RuntimeError):
    """A flow of several runs in which none measured (each failed or was interrupted): its table is published and
    carried here all the same, and the flow ends Failed, so a cron job or an automation sees what a person would
    (a calibration of a corrupt results database ran 20 FAILED A/A runs and exited 0)."""

    def __init__(self, message: str, table: str):
        super().__init__(message)
        self.table = table

    def __reduce__(self):  # a persisted result (pickle) is rebuilt with its table
        return type(self), (str(self), self.table)


def table_or_failed(what: str, table: str, results: list[RunResult | None]) -> str | State:
    """The flow's table, or the Failed state whose data is NoneMeasured (raised to a Python caller) when none of
    its runs measured."""
    if any(r is not None and not r.status.ended_early for r in results):
        return table
    error = NoneMeasured(f"{what}: none of its {len(results)} runs measured (each failed or was interrupted; the "
                         "table says where)", table)
    return Failed(message=str(error), data=error)
