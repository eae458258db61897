"""The run's record: folded into a RunResult, written as report files, published, appended to the database."""
from __future__ import annotations

import re
import socket
from pathlib import Path

from prefect import get_run_logger, task
from prefect.artifacts import create_link_artifact, create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE

from prefect_adapters.run_logs import forward_specops_logs
from specops.backends.base import Backend
from specops.bench.tool import BenchTool
from specops.pipeline.summarize import RunFacts, run_result
from specops.profile.loader import LoadedProfile
from specops.report.tables import comparison_frame
from specops.report.writer import ReportFiles, summary
from specops.report.writer import write_report as write
from specops.results import durable
from specops.results.manifest import MANIFEST
from specops.results.manifest import save_result as save
from specops.results.model import RunResult
from specops.results.store import ResultsError, ResultsStore
from specops.rundir import RunDir

# The process that runs a flow (`specops run`, a worker's flow-run process) imports the flow's
# module, which imports this one: from here on specops' own log lines reach the run's logs.
forward_specops_logs()


@task(cache_policy=NO_CACHE, persist_result=False)
def summarize_run(loaded: LoadedProfile, run: RunDir, backend: Backend, tool: BenchTool, facts: RunFacts,
                  error: BaseException | None = None) -> RunResult:
    """Everything the run measured (or where it failed) as one RunResult."""
    return run_result(loaded, run, backend, tool, facts, error)


@task(cache_policy=NO_CACHE, persist_result=False)
def write_report(result: RunResult, run: RunDir) -> ReportFiles:
    """report.md, comparison.csv, comparison.png and manifest.json into the run directory."""
    files = write(result, run.path)
    get_run_logger().info("report: %s\n%s", files.report_md, summary(result))
    return files


def artifact_key(*parts: str) -> str:
    """Prefect artifact keys allow lowercase letters, digits and dashes only."""
    return re.sub(r"-+", "-", re.sub(r"[^a-z0-9-]", "-", "-".join(parts).lower())).strip("-")


@task(cache_policy=NO_CACHE, persist_result=False)
def publish_artifacts(result: RunResult, files: ReportFiles) -> None:
    """The comparison table and report markdown as Prefect artifacts on the flow run."""
    frame = comparison_frame(result)
    table = frame.astype(object).where(frame.notna(), None).to_dict(orient="records")
    create_table_artifact(key=artifact_key(result.profile, "comparison"), table=table,
                          description=f"{result.profile}: {result.verdict.value}")
    create_markdown_artifact(key=artifact_key(result.profile, "report"), markdown=files.markdown,
                             description=f"{result.profile} report ({result.run_dir})")
    host = socket.gethostname()
    create_link_artifact(key=artifact_key(result.profile, "run-dir"), link=run_dir_link(Path(result.run_dir)),
                         link_text=f"{host}:{result.run_dir}",
                         description=f"{result.profile}: the run directory on {host} (report, logs, exports)")


def run_dir_link(run_dir: Path) -> str:
    """A file:// URL of the run directory: it names the directory on the host that ran the flow
    (the link text says which host); no server publishes artifacts/ over HTTP."""
    return run_dir.resolve().as_uri()


@task(cache_policy=NO_CACHE, persist_result=False)
def save_result(result: RunResult, run: RunDir) -> Path:
    """manifest.json, the whole RunResult, into the run directory: where the result lives first."""
    return save(result, run.path)


@task(cache_policy=NO_CACHE, persist_result=False)
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
