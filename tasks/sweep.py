"""A sweep's steps: validate the grid, find the cells already measured, keep new ones, publish the outcome."""
from __future__ import annotations

import socket
from pathlib import Path

from prefect import get_run_logger
from prefect.artifacts import create_link_artifact, create_markdown_artifact

from prefect_adapters.step import step
from specops.atomic_file import write_text
from specops.profile.loader import LoadedProfile
from specops.report.writer import artifact_key, link_markdown, public_url
from specops.results.model import RunResult
from specops.run.rundir import RunDir
from specops.sweep.cells import CellStore
from specops.sweep.grid import SweepGrid, validate_grid
from specops.sweep.outcome import SweepOutcome
from specops.sweep.plot import write_sweep_plots
from specops.sweep.replayed import check_replayable, replayed_settings
from specops.sweep.table import sweep_markdown


@step
def validate_sweep(loaded: LoadedProfile, grid: SweepGrid) -> LoadedProfile:
    """The loaded profile with every cell's overrides, before anything starts; a sweep needs the base."""
    validate_grid(loaded, grid)
    if not loaded.profile.comparison.baseline:
        raise ValueError(f"{loaded.path}: comparison.baseline is false, and a sweep measures the base beside each "
                         "cell (its speedups are against it): drop that override")
    if not loaded.profile.benchmark.interleave:
        raise ValueError(f"{loaded.path}: benchmark.interleave is false, and a sweep keeps the base's server up "
                         "beside each draft length's, so that every cell is measured paired with the base and has "
                         "its interval; where both servers fit at once (on a GPU: each with half its memory, e.g. "
                         "backend.gpu_memory_utilization), --set benchmark.interleave=true")
    get_run_logger().info("sweep of %s: %s x concurrency %s (%d cells)", loaded.profile.name,
                          ", ".join(s.name for s in grid.series()), grid.concurrencies, len(grid.cells()))
    return loaded


@step
def replay_series(loaded: LoadedProfile, n: int, grid: SweepGrid, prune: bool = False) -> SweepGrid:
    """The grid with the N settings `specops replay` ranks best as its series (in the vLLM venv), best first; with
    `prune`, only those whose predicted interval reaches the best's (each left out logged with why)."""
    from specops.replay.run import predict

    check_replayable(loaded)
    settings, left_out = replayed_settings(loaded, n, lambda p, s: predict(p, s, get_run_logger().info), prune)
    for why in left_out:
        get_run_logger().info("not served: %s", why)
    get_run_logger().info("replay's %d best: %s", n, ", ".join(s.model_dump_json() for s in settings))
    return SweepGrid(draft_lengths=[], concurrencies=grid.concurrencies, settings=settings)


@step
def find_measured_cells(store: CellStore, keys: dict[tuple[str, int], str]) -> dict[tuple[str, int], RunResult]:
    """The cells (series name, c) an earlier sweep of the same settings measured."""
    said = get_run_logger().warning  # a damaged cell: named, moved aside, measured again
    results = {kc: r for kc, key in keys.items() if (r := store.result(key, said)) is not None}
    get_run_logger().info("%d of %d cells already measured", len(results), len(keys))
    return results


@step
def keep_cell(store: CellStore, key: str, result: RunResult) -> None:
    store.put_result(key, result)


@step
def publish_sweep(outcome: SweepOutcome, run: RunDir) -> list[Path]:
    """sweep.md, sweep.json and the plots into the sweep's run directory; the table with the plots inline and a
    link to the directory (every cell's report is under it) as artifacts."""
    write_text(run.path / "sweep.md", f"# Sweep of {outcome.profile}\n\n```\n{outcome.table}\n```\n")
    write_text(run.path / "sweep.json", outcome.model_dump_json(indent=2) + "\n")
    plots = write_sweep_plots(outcome.cells, run.path)
    markdown = "\n".join([f"# Sweep of {outcome.profile} - {run.run_id}", "",
                          *[link_markdown(p, p.stem, image=True) + "\n" for p in plots],
                          link_markdown(run.path, "sweep directory (every cell's report under it)"), "",
                          sweep_markdown(outcome.cells, outcome.crossovers, outcome.choices, outcome.recommendation,
                                         outcome.schedule_cells)])
    create_markdown_artifact(key=artifact_key(outcome.profile, "sweep"), markdown=markdown,
                             description=f"{outcome.profile}: draft length x concurrency ({run.path})")
    create_link_artifact(key=artifact_key(outcome.profile, "sweep-dir"), link=public_url(run.path),
                         link_text=f"{socket.gethostname()}:{run.path}",
                         description=f"{outcome.profile}: the sweep's directory (table, plots, every cell's report)")
    # Where the table is, not the table: the artifacts show it, and `specops sweep` prints it (the result), so
    # the CLI's console, which shows this log too, showed it twice.
    get_run_logger().info("sweep of %s: the table in %s and in this run's artifacts", outcome.profile,
                          run.path / "sweep.md")
    return [run.path / "sweep.md", run.path / "sweep.json", *plots]
