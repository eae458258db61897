"""Publish a comparison of profiles."""
from __future__ import annotations

from prefect import get_run_logger
from prefect.artifacts import create_markdown_artifact

from prefect_adapters.step import step
from specops.atomic_file import write_text
from specops.report.plot import write_compare_plot
from specops.report.writer import artifact_key, link_markdown
from specops.results.model import RunResult
from specops.run.rundir import new_run_id, validate_run_id
from specops.settings import artifacts_root
from specops.sweep.table import format_compare


@step
def publish_comparison(results: list[RunResult], run_id: str | None) -> str:
    """compare.md and compare.png under artifacts/compare/<id>/, the table as an artifact; returns the table."""
    out = artifacts_root() / "compare" / validate_run_id(run_id or new_run_id())
    out.mkdir(parents=True)
    table = format_compare(results)
    write_text(out / "compare.md", f"# Comparison\n\n```\n{table}\n```\n")
    plot = write_compare_plot(results, out / "compare.png")
    markdown = "\n".join([f"# Comparison - {out.name}", "", link_markdown(plot, "speedup per profile", image=True), "",
                          link_markdown(out, "comparison directory"), "", f"```\n{table}\n```"])
    create_markdown_artifact(key=artifact_key("compare"), markdown=markdown,
                             description=f"{', '.join(r.profile for r in results)} ({out})")
    # Where the table is, not the table: the artifact shows it, and `specops compare-profiles` prints it (the
    # flow's result), so the CLI's console, which shows this log too, showed it twice.
    get_run_logger().info("comparison: the table in %s and in this run's artifacts", out / "compare.md")
    return table
