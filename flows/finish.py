"""A finished run's record: its report files, Prefect artifacts, database row and run-directory status.

Shared by the specdec flow (a run) and the sweep flow (each of its cells).
"""
from __future__ import annotations

from pathlib import Path

from specops.results.model import RunResult
from specops.rundir import RunDir
from tasks.report import publish_artifacts, record_result, write_report


def finish(result: RunResult, run: RunDir) -> Path:
    """Report files, Prefect artifacts and the database row, from the one RunResult."""
    files = write_report(result, run)
    publish_artifacts(result, files)
    record_result(result)
    return files.report_md


def set_final_status(run: RunDir, result: RunResult) -> None:
    f = result.failure
    run.set_status(result.status.value, f.step if f else None, f.variant if f else None, f.error if f else None)
