"""Write a run's report files from its RunResult: report.md, comparison.csv, comparison.png, manifest.json."""
from __future__ import annotations

import re
import socket
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from specops.atomic_file import replacing, write_text
from specops.report.costs import overhead_shown, queued_s
from specops.report.plot import write_plot
from specops.report.tables import comparison_frame, report_markdown
from specops.results.durable import COMPARISON_CSV, PLOT_PNG, REPORT_MD, save_result
from specops.results.figures import interval_text
from specops.results.history import headline_speedup
from specops.results.model import RunResult
from specops.settings import artifacts_root, settings


# Where a browser finds a run's file: an http(s) URL under SPECOPS_ARTIFACTS_URL (`make up` serves the artifacts
# root with `specops serve-artifacts`), else a file:// URI, which browsers refuse from a web page, so the text
# beside it names the host and path.
def public_url(path: Path | str) -> str:
    """The http(s) URL of `path` under SPECOPS_ARTIFACTS_URL when it lies under the artifacts root (a
    directory's ends in /), else its file:// URI."""
    path = Path(path).resolve()
    base = settings().specops_artifacts_url
    if base is None:
        return path.as_uri()
    try:
        relative = path.relative_to(artifacts_root())
    except ValueError:  # outside the root the server serves: only this host can open it
        return path.as_uri()
    url = f"{base}/{quote(relative.as_posix())}" if relative.parts else base
    return url + "/" if path.is_dir() else url


def served(path: Path | str) -> bool:
    """Whether a browser can open `path` (public_url gives it an http(s) URL)."""
    return not public_url(path).startswith("file:")


def link_markdown(path: Path | str, text: str, image: bool = False) -> str:
    """A markdown link a browser opens (an image, which the Prefect UI shows inline) when the file is served;
    otherwise the path on its host."""
    if served(path):
        return f"{'!' if image else ''}[{text}]({public_url(path)})"
    note = " (set SPECOPS_ARTIFACTS_URL to see it here)" if image else ""
    return f"{text}: `{Path(path).resolve()}` on {socket.gethostname()}{note}"


# Prefect artifact keys: the UI's catalog shows the latest artifact of each key, so a profile's own runs keep
# theirs (`ngram-local-report`) and sweep cells and members of a comparison or calibration get their own (RunRole).
def artifact_key(*parts: str) -> str:
    """Prefect artifact keys allow lowercase letters, digits and dashes only
    (prefect/server/schemas/actions.py ArtifactCreate validates them)."""
    return re.sub(r"-+", "-", re.sub(r"[^a-z0-9-]", "-", "-".join(parts).lower())).strip("-")


@dataclass(frozen=True)
class ArtifactNames:
    prefix: str  # of every key of the run's artifacts: <prefix>-report, <prefix>-comparison, ...
    title: str  # what the run is, for the artifacts' descriptions and the report's heading

    def key(self, kind: str) -> str:
        return artifact_key(self.prefix, kind)


def run_names(result: RunResult) -> ArtifactNames:
    """A sweep cell: <profile>-sweep-k<K>-c<C> (its series, k<K> or schedule, names it), titled "<profile> - K=2,
    c=4 (sweep cell)"; a member of a compare, calibrate or upgrade flow: <flow>-<profile>; a run of its own:
    <profile>."""
    parts, title = result.role.names(result.profile, result.draft_length, result.benchmark.concurrency)
    return ArtifactNames(artifact_key(*parts), title)


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
    return "\n".join([f"# {title} - {result.run_id}", "", link_markdown(files.plot_png, PLOT_PNG, image=True),
                      "", f"{link_markdown(run_dir, 'run directory')} · {links}", "",
                      *(["Logs of the failed step:", *logs, ""] if logs else []), body.lstrip("\n")])


def summary(result: RunResult) -> str:
    """One line for a terminal or a log."""
    speedup = headline_speedup(result)
    where = f" at {result.failure.step}" if result.failure else ""
    if result.workload and result.workload.categories:
        speedup += f" {result.workload.mix_text()}; per category: " + ", ".join(
            f"{f.category} {interval_text(f.speedup.point, f.speedup.low, f.speedup.high)}"
            + (" cannot tell" if f.verdict() == "cannot tell" else "") for f in result.workload.categories if f.speedup)
    queued = queued_s(result)
    return (f"{result.verdict.value}{where}; speedup vs base {speedup}; flow wall {result.phases.wall_s:.1f}s; "
            f"orchestration overhead {overhead_shown(result):.1f}s"
            + (f"; queued {queued:.1f}s for its slots" if queued >= 1 else ""))
