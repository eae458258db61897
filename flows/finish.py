"""A finished run's record: its report files, Prefect artifacts, database row and run-directory status.

Shared by the specdec flow (a run) and the sweep flow (each of its cells).
"""
from __future__ import annotations

from pathlib import Path

from specops.host import tracking
from specops.results.model import RunResult
from specops.run.rundir import RunDir
from tasks.report import publish_artifacts, record_result, save_result, write_report


def finish(result: RunResult, run: RunDir) -> Path:
    """The RunResult into the run directory, then the database row (which may fail without losing it),
    then the report files and the Prefect artifacts rendered from it."""
    try:
        save_result(result, run)
    finally:  # the database may well be on a disk that is not full
        record_result(result)
    files = write_report(result, run)
    publish_artifacts(result, files)
    return files.report_md


def set_final_status(run: RunDir, result: RunResult) -> None:
    """The run's status from its result; nothing left for a janitor to finish (a sweep cell has no record)."""
    f = result.failure
    run.set_status(result.status.value, f.step if f else None, f.variant if f else None, f.error if f else None)
    tracking.untrack_run(run.path)
