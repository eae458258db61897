"""The `sweep` flow: one profile over a grid of draft length (num_speculative_tokens) x concurrency.

The base is served once and measured at each concurrency; each draft length is served once and
measured at every concurrency (a server restarts per draft length, never per cell). Every cell is
a RunResult of its own (in the results database, with its report in <sweep run>/k<K>/c<C>/) and is
kept under <cache>/sweeps/, so a sweep killed half-way, run again with the same settings, measures
only the cells it lacks. The outcome: the table, the concurrency where speculation stops paying
per K, the best K per concurrency as profile overrides and, where the backend's pinned version
has a per-load schedule, in its own keys.
"""
from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager

from prefect import flow
from prefect.states import State

from flows.finish import finish, set_final_status
from flows.prepare import prepare_models
from flows.serving import Served, measure_group, served
from prefect_adapters.parameters import Concurrencies, DraftLengths, Overrides, ProfileName, RunId, ServeSchedule
from prefect_adapters.reaping import reap_servers
from prefect_adapters.refusal import refused_profiles
from prefect_adapters.slot_limits import Held, hold_slots
from specops.backends.base import Backend
from specops.bench.tool import BenchTool
from specops.host.slots import run_slots
from specops.pipeline.backend import backend_for, tool_for
from specops.pipeline.benchmark import bench_prompts
from specops.pipeline.summarize import RunFacts
from specops.profile.loader import LoadedProfile, load_profile
from specops.results.model import Lossless, RunResult, VariantRecord, Window
from specops.results.role import SWEEP_CELL, RunRole
from specops.run.roots import cache_root
from specops.run.rundir import RunDir, end_open_statuses
from specops.run.variant import BASE, SPECULATIVE, Variant, base_method
from specops.sweep.analysis import Cell, best_k, crossover
from specops.sweep.cells import BaseCell, CellStore
from specops.sweep.grid import SweepGrid, base_overrides, cell_key, cell_overrides, series_dir
from specops.sweep.outcome import SweepOutcome
from specops.sweep.schedule import recommend
from specops.sweep.table import format_sweep
from tasks.check import compare_check_outputs
from tasks.profile import check_prerequisites, check_result_storage, create_run_dir
from tasks.render import build_engine, render_repository
from tasks.report import summarize_run
from tasks.sweep import find_measured_cells, keep_base_cell, keep_cell, publish_sweep, validate_sweep


class Sweep:
    """What every step of one sweep shares."""

    def __init__(self, loaded: LoadedProfile, overrides: list[str], backend: Backend, tool: BenchTool, run: RunDir):
        self.loaded, self.overrides, self.backend, self.tool, self.run = loaded, overrides, backend, tool, run
        self.profile = str(loaded.path)
        self.store = CellStore(cache_root() / "sweeps")
        self.facts = RunFacts()
        self.starts: Counter[str] = Counter()
        self.measured: list[str] = []
        self.tokenizer = None
        self.target = self.draft = None

    def at(self, k: int | None, c: int, extra: tuple[str, ...] = ()) -> LoadedProfile:
        """The profile as the cell runs it (the user's overrides, a served schedule's, then the cell's)."""
        cell = cell_overrides(k, c) if k else base_overrides(c)
        return load_profile(self.profile, [*self.overrides, *extra, *cell])

    def key(self, k: int | None, c: int, extra: tuple[str, ...] = ()) -> str:
        return cell_key(self.loaded.sha256, [*self.overrides, *extra], k, c)

    def hold(self) -> AbstractContextManager[Held]:
        """The profile's slots and host locks, held for a block of measurements."""
        p = self.loaded.profile
        return hold_slots(run_slots(p.serving.exclusive, self.backend.gpus()), f"{p.name} sweep {self.run.run_id}")

    @contextmanager
    def serve(self, variant: Variant, server_run: RunDir, backend: Backend | None = None
              ) -> Iterator[tuple[Served, list[str]]]:
        """One server built, rendered, started and checked (its check outputs given), for the block; `backend`
        (the sweep's unless given) renders it."""
        backend = backend or self.backend
        engines = build_engine(backend, variant, self.target, self.draft, cache_root(), server_run).value
        repo = render_repository(backend, variant, self.target, self.draft, cache_root(), engines, server_run).value
        with served(backend, variant, repo, server_run, self.facts) as up:
            outputs = up.check(self.loaded.profile)
            self.starts[variant.name] += 1
            yield up, outputs

    def measure(self, up: Served, cell: LoadedProfile, cell_run: RunDir) -> VariantRecord:
        """The variant's benchmark rounds at the cell's concurrency, on a server already up."""
        bench = cell.profile.benchmark
        return measure_group([up], self.tool, self.tokenizer, bench, bench_prompts(bench), cell_run).records[0]


def measure_base(sweep: Sweep, concurrencies: list[int]) -> dict[int, BaseCell]:
    """One base server, benchmarked at each concurrency asked; each kept as its cell."""
    variant, server_run = Variant(BASE, base_method()), sweep.run.child("base")
    cells = {}
    with sweep.serve(variant, server_run) as (up, outputs):
        for c in concurrencies:
            record = sweep.measure(up, sweep.at(None, c), server_run.child(f"c{c}"))
            cells[c] = BaseCell(concurrency=c, variant=record, outputs=outputs, servers=dict(sweep.facts.servers))
            keep_base_cell(sweep.store, sweep.key(None, c), cells[c])
            sweep.measured.append(f"base-c{c}")
    return cells


def measure_k(sweep: Sweep, k: int, concurrencies: list[int], bases: dict[int, BaseCell], held,
              schedule: tuple[str, ...] = ()) -> dict:
    """One server at draft length k (or, given `schedule`'s overrides, serving that per-load schedule up to k),
    benchmarked at each concurrency asked; each cell a RunResult."""
    p = sweep.at(k, concurrencies[0], schedule).profile
    name = series_dir(k, bool(schedule))
    variant, server_run = Variant(SPECULATIVE, p.method), sweep.run.child(name)
    results = {}
    # A schedule lives in the backend section, so its server renders from the schedule's own profile.
    with sweep.serve(variant, server_run, backend_for(p) if schedule else None) as (up, outputs):
        base_outputs = next(iter(bases.values())).outputs
        lossless: Lossless | None = None
        if p.comparison.lossless_prompts:
            lossless = compare_check_outputs(base_outputs, outputs, server_run)
        for c in concurrencies:
            cell, cell_run = sweep.at(k, c, schedule), server_run.child(f"c{c}")
            record = sweep.measure(up, cell, cell_run)
            facts = RunFacts(models=dict(sweep.facts.models), variants=[record, bases[c].variant], lossless=lossless,
                             cached_steps=dict(sweep.facts.cached_steps),
                             servers={**bases[c].servers, **sweep.facts.servers},
                             window=Window(started_at=held.started_at, finished_at=time.time(), slots=held.names,
                                           waited_s=round(held.waited_s, 3)))
            result = summarize_cell(cell, cell_run, sweep, facts, name)
            keep_cell(sweep.store, sweep.key(k, c, schedule), result)
            results[(k, c)] = result
            sweep.measured.append(f"{name}-c{c}")
    return results


def summarize_cell(cell: LoadedProfile, cell_run: RunDir, sweep: Sweep, facts: RunFacts, series: str) -> RunResult:
    """The cell's RunResult, a sweep cell of `series`: its report in its directory, its row in the results
    database."""
    role = RunRole(kind=SWEEP_CELL, of=str(sweep.run.path), series=series)
    result = summarize_run(cell, cell_run, sweep.backend, sweep.tool, facts, role=role)
    finish(result, cell_run)
    set_final_status(cell_run, result)
    return result


def prepare(state: Sweep, backend: Backend, tool: BenchTool, run: RunDir) -> None:
    """Prerequisites and models, once per sweep run, before its first server."""
    if state.target is None:
        check_prerequisites(backend, tool, run)
        check_result_storage(run, state.loaded.profile.name)
        state.target, state.draft = prepare_models(state.loaded, backend, run, cache_root(), state.facts)
        state.tokenizer = backend.tokenizer_dir(state.target)


def measure_schedule(state: Sweep, grid: SweepGrid, recommendation, bases: dict[int, BaseCell]) -> list[Cell]:
    """The recommended per-load schedule, served once and measured at every concurrency of the grid, where the
    backend takes it from the profile: a tested schedule, not only a rendered one."""
    if not recommendation.schedule_overrides:
        return []
    schedule = tuple(recommendation.schedule_overrides)
    top = state.at(None, grid.concurrencies[0], schedule).profile.method.draft_length()
    keys = {(top, c): state.key(top, c, schedule) for c in grid.concurrencies}
    results, _ = find_measured_cells(state.store, keys)
    missing = [c for c in grid.concurrencies if (top, c) not in results]
    if missing:
        prepare(state, state.backend, state.tool, state.run)
        with state.hold() as held:
            needed = sorted(set(missing) - set(bases))
            if needed:
                bases.update(measure_base(state, needed))
            results.update(measure_k(state, top, missing, bases, held, schedule))
    return [Cell.from_result(top, c, results[(top, c)]) for c in grid.concurrencies]


@flow(name="sweep", on_cancellation=[reap_servers], on_crashed=[reap_servers], log_prints=True)
def sweep(profile: ProfileName = "ngram-local", draft_lengths: DraftLengths = (1, 2, 4),
          concurrencies: Concurrencies = (1, 2, 4), overrides: Overrides = (), run_id: RunId = "",
          serve_schedule: ServeSchedule = True) -> SweepOutcome | State:
    """Measure the profile at every draft length x concurrency (cells measured before come from the cache), then
    serve the recommended per-load schedule where the backend takes one (serve_schedule: false skips that)."""
    overrides = list(overrides or [])
    grid = SweepGrid(draft_lengths=list(draft_lengths), concurrencies=list(concurrencies))
    if (refused := refused_profiles([profile], overrides)) is not None:
        return refused
    loaded = validate_sweep(profile, overrides, grid)
    run = create_run_dir(loaded, run_id)
    backend, tool = backend_for(loaded.profile), tool_for(loaded.profile)
    state = Sweep(loaded, overrides, backend, tool, run)
    keys = {(k, c): state.key(k, c) for k in [None, *grid.draft_lengths] for c in grid.concurrencies}
    results, bases = find_measured_cells(state.store, keys)
    missing = {k: [c for c in grid.concurrencies if (k, c) not in results] for k in grid.draft_lengths}
    missing = {k: cs for k, cs in missing.items() if cs}
    try:
        if missing:
            prepare(state, backend, tool, run)
            with state.hold() as held:
                needed = sorted({c for cs in missing.values() for c in cs} - set(bases))
                if needed:
                    bases.update(measure_base(state, needed))
                for k, cs in missing.items():
                    results.update(measure_k(state, k, cs, bases, held))
        cells = [Cell.from_result(k, c, results[(k, c)]) for k in grid.draft_lengths for c in grid.concurrencies]
        crossovers, best = crossover(cells), best_k(cells)
        recommendation = recommend(loaded, best)
        served = measure_schedule(state, grid, recommendation, bases) if serve_schedule else []
        outcome = SweepOutcome(profile=loaded.profile.name, overrides=overrides, grid=grid, run_dir=str(run.path),
                               cells=cells, crossovers=crossovers, best=best, recommendation=recommendation,
                               schedule_cells=served, measured=state.measured, server_starts=dict(state.starts),
                               table=format_sweep(cells, crossovers, best, recommendation, served))
        with run.timed("publish", "sweep", announce=False):  # a report that cannot be written fails the sweep too
            publish_sweep(outcome, run)
    except BaseException as error:
        step, variant = run.progress.failed_at or ("sweep", None)
        run.say_failed(step, variant, f"{type(error).__name__}: {error}")
        end_open_statuses(run.path, "failed", f"the sweep failed at {step}: {type(error).__name__}: {error}")
        raise
    end_open_statuses(run.path, "ok")  # its servers' directories (their cells ended with their results)
    run.set_status("ok")
    return outcome
