"""Write the run's report files, and publish the same table and markdown as Prefect artifacts."""
from __future__ import annotations

import re

import pandas as pd
from prefect import get_run_logger, task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE

from specops.backends.base import load_backend
from specops.lossless import LosslessResult
from specops.profile.loader import LoadedProfile
from specops.report.results import VariantResult
from specops.report.writer import RunReport
from specops.report.writer import write_report as write
from specops.rundir import RunDir
from specops.sources.base import ModelArtifact


@task(cache_policy=NO_CACHE, persist_result=False)
def write_report(run: RunDir, loaded: LoadedProfile, results: list[VariantResult], lossless: LosslessResult | None,
                 models: dict[str, ModelArtifact]) -> RunReport:
    """comparison.csv, report.md, comparison.png and manifest.json into the run directory."""
    report = write(run, loaded, results, lossless, models, load_backend(loaded.profile).benchmark_notes())
    get_run_logger().info("report: %s\n%s", report.report_md, report.summary())
    return report


def artifact_key(*parts: str) -> str:
    """Prefect artifact keys allow lowercase letters, digits and dashes only."""
    return re.sub(r"-+", "-", re.sub(r"[^a-z0-9-]", "-", "-".join(parts).lower())).strip("-")


@task(cache_policy=NO_CACHE, persist_result=False)
def publish_artifacts(report: RunReport, profile_name: str) -> None:
    """The comparison table and report markdown as Prefect artifacts on the flow run."""
    frame = pd.read_csv(report.comparison_csv)
    table = frame.astype(object).where(frame.notna(), None).to_dict(orient="records")
    create_table_artifact(key=artifact_key(profile_name, "comparison"), table=table,
                          description=f"{profile_name}: {report.status}")
    create_markdown_artifact(key=artifact_key(profile_name, "report"), markdown=report.markdown,
                             description=f"{profile_name} report ({report.run_dir})")
