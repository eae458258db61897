"""Publish a profile's A/A calibration."""
from __future__ import annotations

from datetime import UTC, datetime

from prefect import get_run_logger
from prefect.artifacts import create_markdown_artifact

from prefect_adapters.step import step
from specops.atomic_file import write_text
from specops.report.writer import artifact_key, link_markdown
from specops.results.calibration import Calibration, format_calibration, host_summary, save_host_calibration
from specops.run.rundir import new_run_id, validate_run_id
from specops.settings import artifacts_root, cache_root


@step
def publish_calibration(calibration: Calibration, run_id: str | None) -> str:
    """calibration.md under artifacts/calibrate/<profile>/<id>/ and as an artifact; returns its text."""
    out = artifacts_root() / "calibrate" / calibration.profile / validate_run_id(run_id or new_run_id())
    out.mkdir(parents=True)
    text = format_calibration(calibration)
    if calibration.measured:  # every later run of the profile on this host says so
        cpu = next(r.host.cpu_model for r in calibration.results)
        when = datetime.now(UTC).strftime("%Y-%m-%d")
        save_host_calibration(cache_root(), calibration.profile, host_summary(calibration, when), cpu,
                              str(out / "calibration.md"))
    write_text(out / "calibration.md", f"# A/A calibration\n\n```\n{text}\n```\n")
    markdown = f"{link_markdown(out, 'calibration directory')}\n\n```\n{text}\n```"
    create_markdown_artifact(key=artifact_key(calibration.profile, "calibration"), markdown=markdown,
                             description=f"{calibration.profile}: base against base ({out})")
    # Where the text is, not the text: the artifact shows it, and `specops calibrate` prints it (the flow's
    # result), so the CLI's console, which shows this log too, showed it twice.
    get_run_logger().info("calibration: the report in %s and in this run's artifacts", out / "calibration.md")
    return text
