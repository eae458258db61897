"""The `sweep` flow: one profile over a grid of draft length (num_speculative_tokens), or settings (a draft length
with n-gram lengths, or the replay's best settings: specops.sweep.grid SweepSetting), x concurrency.

The base's server is started once and stays up; each draft length is served once beside it and measured at
every concurrency (a server restarts per draft length, never per cell), the base measured with it in the same
window: requests interleaved at concurrency 1, alternating rounds above it, so every cell's speedup has its
interval. Every cell is a RunResult of its own (in the results database, with its report in
<sweep run>/k<K>/c<C>/, k<K>-min<m>-max<M>/c<C>/ for a setting) and is kept under <cache>/sweeps/, so a
sweep killed half-way, run again with the same settings, measures only the cells it lacks (specops.sweep.plan).
The outcome: the table, the concurrency where speculation stops paying per series, the K (or setting) per
concurrency where its interval says it pays (specops.sweep.analysis.choose) as profile overrides and, where the
backend's pinned version has a per-load schedule, in its own keys.
"""
from __future__ import annotations

import time
from contextlib import ExitStack
from dataclasses import replace

from prefect import flow
from prefect.states import State

from flows.finish import finish, set_final_status
from flows.prepare import prepare_models, variant_repository
from flows.serving import Served, measure_group, served
from prefect_adapters.parameters import (
    Concurrencies,
    DraftLengths,
    FromReplay,
    NgramMaxes,
    NgramMins,
    Overrides,
    ProfileName,
    Prune,
    RunId,
    ServeSchedule,
    default_of,
)
from prefect_adapters.reaping import reap_servers
from prefect_adapters.refusal import loaded_or_refused, refused_run_id
from prefect_adapters.slot_limits import Held, hold_slots
from specops.cost.slots import run_slots
from specops.host import tracking
from specops.pipeline.backend import backend_for, tool_for
from specops.pipeline.check import separate_check
from specops.profile.loader import overridden
from specops.replay.run import priced_at
from specops.results.model import RunResult, Window
from specops.results.role import SWEEP_CELL, RunRole
from specops.run.rundir import INTERRUPTED, end_open_statuses
from specops.run.variant import BASE, SPECULATIVE, Variant, base_method
from specops.settings import cache_root
from specops.sweep.analysis import Cell, choose_k
from specops.sweep.cells import CellStore
from specops.sweep.grid import CELL_ROUNDS, MAX_KEY, MIN_KEY, Series, SweepGrid, knob_settings
from specops.sweep.outcome import SweepOutcome, sweep_outcome
from specops.sweep.plan import BASE_GROUP, ServerGroup, SweepRun, plan_sweep
from specops.sweep.schedule import recommend
from tasks.benchmark import predict_acceptance
from tasks.check import compare_check_outputs
from tasks.models import download_workload
from tasks.profile import check_prerequisites, check_result_storage, create_run_dir
from tasks.report import summarize_run
from tasks.sweep import find_measured_cells, keep_cell, publish_sweep, replay_series, validate_sweep


class SweepServers:
    """The slots' hold and the base's server, begun at the sweep run's first missing cell and kept until the flow's
    stack closes: each cell measures the base beside its own server, in the same window (intervals need both)."""

    def __init__(self, stack: ExitStack):
        self.stack, self.base, self.held, self.outputs = stack, None, None, []

    def up(self, sweep: SweepRun) -> tuple[Served, Held]:
        if self.base is None:
            p, variant, server_run = sweep.loaded.profile, Variant(BASE, base_method()), sweep.run.child("base")
            self.held = self.stack.enter_context(hold_slots(run_slots(p.serving.exclusive, sweep.backend.gpus()),
                                                            f"{p.name} sweep {sweep.run.run_id}", sweep.run))
            repo = variant_repository(sweep.backend, variant, sweep.models, server_run)
            self.base = self.stack.enter_context(served(sweep.backend, variant, repo, server_run, sweep.facts))
            self.outputs = self.base.check(p, sweep.workload)
        return self.base, self.held


def measure_series(sweep: SweepRun, series: list[Series], cs: list[int], servers: SweepServers
                   ) -> tuple[list[Cell], SweepRun]:
    """The series' cells at each concurrency, those kept before read back and the rest measured, server by server
    as the plan says, each beside the base; and the sweep run that leaves."""
    results = find_measured_cells(sweep.store, sweep.keys(series, cs))
    started: tuple[ServerGroup, ...] = ()
    if plan := plan_sweep(series, cs, results):
        if sweep.models is None:  # prerequisites and models, once per sweep run, before its first server
            check_prerequisites(sweep.backend, sweep.tool, sweep.run)
            check_result_storage(sweep.run, sweep.loaded.profile.name)
            models = prepare_models(sweep.loaded, sweep.backend, sweep.run, cache_root(), sweep.facts)
            sweep = replace(sweep, models=models, tokenizer=sweep.backend.tokenizer_dir(models.target),
                            workload=download_workload(sweep.loaded.profile, models.target, models.cache, sweep.run))
        started = () if servers.base is not None else (BASE_GROUP,)
        for group in plan:
            cells = measure_server(sweep, group, servers)
            results.update({(group.series.name, c): result for c, result in cells.items()})
    cells = [Cell.from_result(s.k, c, results[(s.name, c)], s.settings) for s in series for c in cs]
    return cells, replace(sweep, served=(*sweep.served, *started, *plan))


def measure_server(sweep: SweepRun, group: ServerGroup, servers: SweepServers) -> dict[int, RunResult]:
    """One server of the plan (a draft length or the schedule up to one), built, rendered, started and checked
    against the base's outputs, then benchmarked beside the base at each concurrency of its group: requests
    interleaved where the tool can (concurrency 1), else alternating rounds, at least CELL_ROUNDS of them."""
    base, held = servers.up(sweep)
    series, server_run = group.series, sweep.run.child(group.series.name)
    p = sweep.profile(series, group.concurrencies[0]).profile
    variant = Variant(SPECULATIVE, p.method)
    # A schedule lives in the backend section, so its server renders from the schedule's own profile.
    backend = backend_for(p) if series.schedule else sweep.backend
    repo = variant_repository(backend, variant, sweep.models, server_run)
    # The replay's figures for this draft length, on cores no measurement uses yet; a schedule's K varies with load.
    predicted = None if series.schedule else \
        predict_acceptance(sweep.profile(series, group.concurrencies[0]), backend, server_run, sweep.workload)
    cells: dict[int, RunResult] = {}
    with served(backend, variant, repo, server_run, sweep.facts) as up:
        outputs, tokens = up.check(sweep.loaded.profile, sweep.workload), p.comparison.lossless_max_tokens
        why = "each server of a sweep is checked once, before its cells"
        lossless = compare_check_outputs(separate_check(servers.outputs, tokens, why),
                                         separate_check(outputs, tokens, why), server_run) \
            if p.comparison.lossless_prompts else None
        for c in group.concurrencies:
            cell, cell_run = sweep.profile(series, c), server_run.child(f"c{c}")
            bench = cell.profile.benchmark
            measured = measure_group([up, base], sweep.tool, sweep.tokenizer, bench, sweep.workload, cell_run,
                                     min_rounds=CELL_ROUNDS)
            if measured.rounds != bench.rounds:  # the cell's profile says what was run
                cell = overridden(cell, [f"benchmark.rounds={measured.rounds}"])
            window = Window(started_at=held.started_at, finished_at=time.time(), slots=held.names,
                            waited_s=round(held.waited_s, 3))
            role = RunRole(kind=SWEEP_CELL, of=str(sweep.run.path), series=series.name)
            facts = sweep.cell_facts(measured.records, lossless, window, (measured.design, measured.why_not_requests),
                                     priced_at(predicted, cell))
            measured_cell = summarize_run(cell, cell_run, sweep.backend, sweep.tool, facts, role=role)
            cells[c] = result = finish(measured_cell, cell_run).result  # FAILED at report if that failed
            set_final_status(cell_run, result)
            keep_cell(sweep.store, sweep.key(series, c), result)
    return cells


@flow(name="sweep", on_cancellation=[reap_servers], on_crashed=[reap_servers], log_prints=True)
def sweep(profile: ProfileName = default_of(ProfileName), draft_lengths: DraftLengths = default_of(DraftLengths),
          concurrencies: Concurrencies = default_of(Concurrencies), overrides: Overrides = default_of(Overrides),
          run_id: RunId = default_of(RunId), serve_schedule: ServeSchedule = default_of(ServeSchedule),
          ngram_min: NgramMins = default_of(NgramMins), ngram_max: NgramMaxes = default_of(NgramMaxes),
          from_replay: FromReplay = default_of(FromReplay), prune: Prune = default_of(Prune)) -> SweepOutcome | State:
    """Measure the profile at every draft length (x n-gram lengths, or the replay's best settings) x concurrency
    (cells measured before come from the cache), then serve the recommended per-load schedule where the backend
    takes one (serve_schedule: false skips that)."""
    overrides, ks = list(overrides or []), list(draft_lengths)
    grid = SweepGrid(draft_lengths=ks, concurrencies=list(concurrencies),
                     settings=knob_settings(ks, {MIN_KEY: list(ngram_min), MAX_KEY: list(ngram_max)}))
    if isinstance(loaded := loaded_or_refused(profile, overrides), State):  # the CLI's load, where it made one
        return loaded
    validate_sweep(loaded, grid)
    if (refused := refused_run_id(run_id, loaded.profile.name)) is not None:  # before the replay's minutes
        return refused
    if from_replay:  # the replay's best settings are the series instead
        grid = replay_series(loaded, from_replay, grid, prune)
        validate_sweep(loaded, grid)
    run = create_run_dir(loaded, run_id)
    state = SweepRun(loaded, tuple(overrides), backend_for(loaded.profile), tool_for(loaded.profile), run,
                     CellStore(cache_root() / "sweeps"))
    cs = grid.concurrencies
    try:
        with ExitStack() as stack:  # the base's server and the slots, from the first missing cell to the last
            servers = SweepServers(stack)
            cells, state = measure_series(state, grid.series(), cs, servers)
            choices = choose_k(cells)
            recommendation = recommend(loaded, {c: choice.k for c, choice in choices.items()},
                                       {c: choice.why for c, choice in choices.items()},
                                       {c: choice.setting for c, choice in choices.items()},
                                       {c: choice.why for c, choice in choices.items() if choice.undecided})
            schedule = state.schedule(recommendation.schedule_overrides, cs[0]) if serve_schedule else None
            schedule_cells, state = measure_series(state, [schedule], cs, servers) if schedule else ([], state)
        outcome = sweep_outcome(state, grid, cells, choices, recommendation, schedule_cells)
        with run.timed("publish", "sweep", announce=False):  # a report that cannot be written fails the sweep too
            publish_sweep(outcome, run)
    except BaseException as error:
        step, variant = run.progress.failed_at or ("sweep", None)
        run.fail_at(step, variant, error)  # interrupted (never failed) when an interrupt or a cancellation ended it
        state = "failed" if isinstance(error, Exception) else INTERRUPTED
        end_open_statuses(run.path, state, f"the sweep {state} at {step}: {type(error).__name__}: {error}")
        tracking.untrack_run(run.path)
        raise
    end_open_statuses(run.path, "ok")  # its servers' directories (their cells ended with their results)
    run.set_status("ok")
    tracking.untrack_run(run.path)
    return outcome
