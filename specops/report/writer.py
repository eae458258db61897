"""Write everything a run reports: comparison.csv, report.md, plot, manifest.json, timings."""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from specops.lossless import LosslessResult
from specops.profile.loader import LoadedProfile
from specops.report.manifest import build_manifest
from specops.report.plot import write_plot
from specops.report.results import VariantResult
from specops.report.tables import speedup, verdict, write_tables
from specops.rundir import RunDir
from specops.sources.base import ModelArtifact

MEASURED_PHASES = ("serve", "check", "benchmark", "draft")  # draft: synthesis + training, when not cached


@dataclass(frozen=True)
class RunReport:
    run_dir: Path
    report_md: Path
    comparison_csv: Path
    plot_png: Path
    manifest_json: Path
    markdown: str
    status: str
    speedup: float | None
    wall_s: float
    overhead_s: float
    phase_s: dict[str, float]

    def summary(self) -> str:
        ratio = f"{self.speedup:.2f}x" if self.speedup else "n/a"
        phases = " - ".join(f"{k} {v:.1f}s" for k, v in self.phase_s.items())
        return (f"{self.status}; speedup vs base {ratio}; flow wall {self.wall_s:.1f}s; "
                f"orchestration overhead {self.overhead_s:.1f}s (wall - {phases})")


def phase_totals(run: RunDir) -> tuple[float, dict[str, float]]:
    data = run.timings()
    wall = time.time() - data.get("started_at", time.time())
    totals = {p: sum(data.get("phases", {}).get(p, {}).values()) for p in MEASURED_PHASES}
    return wall, totals


def served_tools(run: RunDir) -> dict[str, str]:
    """Server versions as each started server reported them (servers/<variant>.json)."""
    found = {}
    for record in sorted((run.path / "servers").glob("*.json")):
        data = json.loads(record.read_text())
        if data.get("tool"):
            found[data["tool"]] = data.get("version", "unknown")
    return found


def write_report(run: RunDir, loaded: LoadedProfile, results: list[VariantResult], lossless: LosslessResult | None,
                 models: dict[str, ModelArtifact], backend_notes: list[str] | tuple[str, ...] = ()) -> RunReport:
    profile = loaded.profile
    wall, totals = phase_totals(run)
    overhead = wall - sum(totals.values())
    status, reasons = verdict(lossless)
    b = profile.benchmark
    notes = [
        f"genai-perf {b.num_requests} requests (+{b.warmup_requests} warm-up), {b.output_tokens} output tokens, "
        f"concurrency {b.concurrency}, prompts: {b.prompts}",
        f"flow wall {wall:.1f}s; serve {totals['serve']:.1f}s, check {totals['check']:.1f}s, "
        f"benchmark {totals['benchmark']:.1f}s, draft data and training {totals['draft']:.1f}s; "
        f"orchestration overhead {overhead:.1f}s",
        *backend_notes,
    ]
    csv_path, md_path, md = write_tables(run.path, f"{profile.name} - {run.run_id}", results, lossless, notes)
    plot = write_plot(run.path / "comparison.png", f"{profile.name} ({status})", results)
    manifest = build_manifest(profile.name, loaded.sha256, run.run_id, models, served_tools(run), extra={
        "status": status, "reasons": reasons, "speedup": speedup(results),
        "timings": {"wall_s": wall, "overhead_s": overhead, **{f"{k}_s": v for k, v in totals.items()}},
        "results": [r.to_dict() for r in results],
        "lossless": lossless.to_dict() if lossless else None,
    })
    manifest_path = run.write_json("manifest.json", manifest)
    return RunReport(run.path, md_path, csv_path, plot, manifest_path, md, status, speedup(results), wall,
                     overhead, totals)
