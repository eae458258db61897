"""Publish an upgrade check's side-by-side table."""
from __future__ import annotations

from prefect import get_run_logger
from prefect.artifacts import create_markdown_artifact

from prefect_adapters.step import step
from specops.atomic_file import write_text
from specops.report.writer import artifact_key, link_markdown
from specops.results.model import RunResult
from specops.run.rundir import new_run_id, validate_run_id
from specops.settings import artifacts_root
from specops.upgrade.plot import write_upgrade_plot
from specops.upgrade.sides import Side
from specops.upgrade.table import format_upgrade, speedup_line


@step
def publish_upgrade(profile: str, sides: list[Side], results: list[RunResult | None], run_id: str | None) -> str:
    """upgrade.md and upgrade.png under artifacts/upgrade/<profile>/<id>/, the table as a markdown artifact;
    returns the table."""
    out = artifacts_root() / "upgrade" / profile / validate_run_id(run_id or new_run_id())
    out.mkdir(parents=True)
    table = format_upgrade(profile, sides, results)
    write_text(out / "upgrade.md", table)
    plot = write_upgrade_plot(sides, results, out / "upgrade.png")
    markdown = "\n".join([table, link_markdown(plot, "speedup and acceptance per draft position, per side",
                                                image=True), "", link_markdown(out, "upgrade check directory")])
    create_markdown_artifact(key=artifact_key("upgrade", profile), markdown=markdown,
                             description=f"{profile}: {sides[0].setting} -> {sides[1].setting} ({out})")
    # One line, not the table: the CLI prints the table it returns, the artifact shows it in the UI.
    get_run_logger().info("upgrade check: %s (%s)", speedup_line(*results), out / "upgrade.md")
    return table
