"""Write a run's report files from its RunResult: report.md, comparison.csv, comparison.png, manifest.json."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from specops.atomic_file import replacing, write_text
from specops.report.links import figure_markdown, link_markdown
from specops.report.plot import write_plot
from specops.report.tables import comparison_frame, report_markdown
from specops.results.manifest import MANIFEST, save_result
from specops.results.model import RunResult

REPORT_MD, COMPARISON_CSV, PLOT_PNG, MANIFEST_JSON = "report.md", "comparison.csv", "comparison.png", MANIFEST
REPORT_NAMES = (REPORT_MD, COMPARISON_CSV, PLOT_PNG, MANIFEST_JSON)


@dataclass(frozen=True)
class ReportFiles:
    report_md: Path
    comparison_csv: Path
    plot_png: Path
    manifest_json: Path  # the whole RunResult: what produced the run and what it measured
    markdown: str


def write_report(result: RunResult, run_path: Path) -> ReportFiles:
    run_path = Path(run_path)
    run_path.mkdir(parents=True, exist_ok=True)
    csv_path = run_path / COMPARISON_CSV
    with replacing(csv_path) as tmp:
        comparison_frame(result).to_csv(tmp, index=False)
    md = report_markdown(result)
    md_path = run_path / REPORT_MD
    write_text(md_path, md)
    manifest = save_result(result, run_path)  # finish() wrote it first; a direct caller gets it too
    plot = write_plot(run_path / PLOT_PNG, result)
    return ReportFiles(md_path, csv_path, plot, manifest, md)


def report_artifact(result: RunResult, files: ReportFiles, title: str) -> str:
    """report.md as the run's markdown artifact shows it: headed by what the run is, its plot inline and its
    files linked (over HTTP where the artifacts are served)."""
    body = files.markdown.split("\n", 1)[1] if files.markdown.startswith("# ") else files.markdown
    run_dir = Path(result.run_dir)
    links = " · ".join(link_markdown(p, p.name) for p in (files.report_md, files.comparison_csv, files.manifest_json))
    logs = [f"- {link_markdown(log, Path(log).name)}" for log in (result.failure.logs if result.failure else [])]
    return "\n".join([f"# {title} - {result.run_id}", "", figure_markdown(files.plot_png, "comparison.png"), "",
                      f"{link_markdown(run_dir, 'run directory')} · {links}", "",
                      *(["Logs of the failed step:", *logs, ""] if logs else []), body.lstrip("\n")])


def summary(result: RunResult) -> str:
    """One line for a terminal or a log."""
    speedup = result.speedup.text() if result.speedup else "n/a"
    where = f" at {result.failure.step}" if result.failure else ""
    return (f"{result.verdict.value}{where}; speedup vs base {speedup}; flow wall {result.phases.wall_s:.1f}s; "
            f"orchestration overhead {result.overhead_s:.1f}s"
            + (f"; queued {result.waited_s:.1f}s for its slots" if result.waited_s >= 1 else ""))
