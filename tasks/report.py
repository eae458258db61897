"""The run's record: folded into a RunResult, written as report files, published, appended to the database."""
from __future__ import annotations

import socket
from pathlib import Path

from prefect import get_run_logger
from prefect.artifacts import create_link_artifact, create_markdown_artifact, create_table_artifact

from prefect_adapters.step import forward_specops_logs, step
from specops.backends.base import Backend
from specops.bench.tool import BenchTool
from specops.pipeline.summarize import RunFacts, run_result
from specops.profile.loader import LoadedProfile
from specops.report.tables import table_artifact
from specops.report.writer import ReportFiles, public_url, report_artifact, run_names, summary
from specops.report.writer import write_report as write
from specops.results import durable
from specops.results.durable import MANIFEST
from specops.results.durable import save_result as save
from specops.results.model import RunResult
from specops.results.role import RunRole
from specops.results.store import ResultsError, ResultsStore
from specops.run.rundir import RunDir

# The process that runs a flow (`specops run`, a worker's flow-run process) imports the flow's
# module, which imports this one: from here on specops' own log lines reach the run's logs.
forward_specops_logs()


@step
def summarize_run(loaded: LoadedProfile, run: RunDir, backend: Backend, tool: BenchTool, facts: RunFacts,
                  error: BaseException | None = None, role: RunRole = RunRole()) -> RunResult:
    """Everything the run measured (or where it failed) as one RunResult, in the role its caller gave it."""
    return run_result(loaded, run, backend, tool, facts, error, role)


@step
def write_report(result: RunResult, run: RunDir) -> ReportFiles:
    """report.md, comparison.csv, comparison.png and manifest.json into the run directory."""
    files = write(result, run.path)
    get_run_logger().info("report: %s\n%s", files.report_md, summary(result))
    return files


@step
def publish_artifacts(result: RunResult, files: ReportFiles) -> None:
    """The comparison table (rounded), the report with its plot inline and the run directory's link as Prefect
    artifacts on the flow run, under the keys of what the run is (a run of its own, a sweep cell, a member)."""
    names = run_names(result)
    create_table_artifact(key=names.key("comparison"), table=table_artifact(result),
                          description=f"{names.title}: {result.verdict.value}")
    create_markdown_artifact(key=names.key("report"), markdown=report_artifact(result, files, names.title),
                             description=f"{names.title} report ({result.run_dir})")
    host = socket.gethostname()
    create_link_artifact(key=names.key("run-dir"), link=public_url(result.run_dir),
                         link_text=f"{host}:{result.run_dir}",
                         description=f"{names.title}: the run directory on {host} (report, logs, exports)")


@step
def save_result(result: RunResult, run: RunDir) -> Path:
    """manifest.json, the whole RunResult, into the run directory: where the result lives first."""
    return save(result, run.path)


@step
def record_result(result: RunResult) -> bool:
    """Append the RunResult to the results database ($SPECOPS_RESULTS_URL, else SQLite under artifacts/),
    and what earlier runs could not. A database that is gone costs only this append: the result stays
    in its run directory with a pointer for `specops results import` or the next run. False then."""
    logger = get_run_logger()
    try:
        store = ResultsStore.open()
    except ResultsError as exc:
        return _kept_unrecorded(result, exc)
    with store:
        try:
            store.append(result)
        except ResultsError as exc:
            return _kept_unrecorded(result, exc)
        logger.info("run %s (%s) recorded in the results database", result.run_id, result.uid[:12])
        try:
            for imported in durable.import_unrecorded(store):
                logger.info("recorded %s too: an earlier run the database missed (%s)", imported.result.run_id,
                            imported.run_dir)
        except ResultsError as exc:  # they stay pending: this run's own row is in
            logger.warning("results of earlier runs stay unrecorded: %s", exc)
    return True


def _kept_unrecorded(result: RunResult, error: ResultsError) -> bool:
    try:
        durable.mark_unrecorded(result, str(error))
    except OSError as exc:  # a full disk as well: the manifest is still there to import by its directory
        get_run_logger().error("could not leave the pointer for the next run: %s", exc)
    get_run_logger().warning("%s\nThe result is kept in %s; `specops results import %s` records it (or the next "
                             "run does)", error, Path(result.run_dir) / MANIFEST, result.run_dir)
    return False
