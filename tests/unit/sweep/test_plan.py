"""The sweep as a plan: which servers a sweep still starts, and which cells each measures, from the cells kept
before; the sweep run's cell profiles and keys; its outcome, named by the servers it started."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from specops.pipeline.summarize import RunFacts
from specops.profile.loader import load_profile
from specops.results.model import Lossless, VariantRecord, Window
from specops.results.paired import Design
from specops.run.rundir import RunDir
from specops.sweep.analysis import Cell, best_k, choose_k
from specops.sweep.cells import CellStore
from specops.sweep.grid import BASE_SERIES, Series, SweepGrid, cell_key
from specops.sweep.outcome import sweep_outcome
from specops.sweep.plan import BASE_GROUP, ServerGroup, SweepRun, plan_sweep
from specops.sweep.schedule import recommend

KS, CS = [Series(1), Series(2), Series(4)], [1, 2]
ALL = {(s.name, c) for s in KS for c in CS}


def test_a_first_sweep_starts_one_server_per_draft_length_measuring_every_cell():
    assert plan_sweep(KS, CS, kept=set()) == (
        ServerGroup(Series(1), (1, 2)), ServerGroup(Series(2), (1, 2)), ServerGroup(Series(4), (1, 2)))
    assert BASE_GROUP == ServerGroup(BASE_SERIES, ())  # the base, up beside them, measures no cell of its own


def test_a_sweep_killed_half_way_measures_only_the_cells_it_lacks():
    # Killed during K=2 at concurrency 2: K=1's cells and K=2 at 1 were kept.
    kept = {("k1", 1), ("k1", 2), ("k2", 1)}
    plan = plan_sweep(KS, CS, kept)
    assert plan == (ServerGroup(Series(2), (2,)), ServerGroup(Series(4), (1, 2)))
    measured = {(g.series.name, c) for g in plan for c in g.concurrencies}
    assert not measured & kept and measured | kept == ALL  # nothing measured twice, nothing left out


def test_a_sweep_whose_cells_were_all_kept_starts_no_server():
    assert plan_sweep(KS, CS, ALL) == ()


def test_the_schedule_is_one_server_at_every_concurrency_of_the_grid():
    schedule = Series(2, ("method.num_speculative_tokens=2", "backend.draft_schedule=[[1, 1, 2], [2, 2, 1]]"))
    assert schedule.name == "schedule"
    assert plan_sweep([schedule], CS, set()) == (ServerGroup(schedule, (1, 2)),)
    assert plan_sweep([schedule], CS, {("schedule", 1)}) == (ServerGroup(schedule, (2,)),)
    assert plan_sweep([schedule], CS, {("schedule", 1), ("schedule", 2)}) == ()


def sweep_run(overrides: tuple[str, ...] = ("benchmark.num_requests=4",), **progress) -> SweepRun:
    loaded = load_profile("ngram-local", list(overrides))
    return SweepRun(loaded, overrides, backend=None, tool=None, run=None, store=CellStore(Path("/nowhere")),
                    **progress)


def test_a_cell_runs_the_user_overrides_then_its_own_and_is_kept_under_the_key_a_sweep_reads_back():
    sweep = sweep_run()
    cell = sweep.profile(Series(2), 4).profile
    assert cell.method.num_speculative_tokens == 2 and cell.benchmark.concurrency == 4
    assert cell.benchmark.num_requests == 4
    assert sweep.profile(BASE_SERIES, 2).profile.benchmark.concurrency == 2
    sha = sweep.loaded.sha256
    assert sweep.key(Series(2), 4) == cell_key(sha, ["benchmark.num_requests=4"], 2, 4)
    assert sweep.key(BASE_SERIES, 4) == cell_key(sha, ["benchmark.num_requests=4"], None, 4)
    schedule = Series(2, ("x=1",))
    assert sweep.key(schedule, 4) == cell_key(sha, ["benchmark.num_requests=4", "x=1"], 2, 4)


def test_the_keys_looked_up_are_the_series_cells():
    sweep = sweep_run()
    keys = sweep.keys([Series(1), Series(2)], CS)
    assert list(keys) == [("k1", 1), ("k1", 2), ("k2", 1), ("k2", 2)] and keys[("k2", 1)] == sweep.key(Series(2), 1)


def test_the_recommended_schedule_is_served_up_to_its_largest_draft_length():
    sweep = SweepRun(load_profile("ngram-vllm-serve-cpu"), (), None, None, None, CellStore(Path("/nowhere")))
    overrides = recommend(sweep.loaded, {1: 3, 2: 1, 4: None}).schedule_overrides
    assert overrides is not None
    schedule = sweep.schedule(overrides, 1)
    assert schedule == Series(3, tuple(overrides)) and schedule.name == "schedule"
    assert sweep.schedule(None, 1) is None and sweep.schedule([], 1) is None


def test_a_cells_facts_are_its_records_paired_by_their_design_and_a_snapshot_of_the_runs():
    facts = RunFacts(cached_steps={"download target": True}, servers={"vllm": "0.2"})
    sweep = sweep_run(facts=facts)
    records = [VariantRecord(name="speculative", method="ngram", model="m"),
               VariantRecord(name="base", method="none", model="m")]
    lossless, window = Lossless(compared=1, mismatches=0), Window(started_at=1.0, finished_at=2.0)
    cell = sweep.cell_facts(records, lossless, window, (Design.ROUNDS, "requests interleave only at concurrency 1"))
    assert cell.variants == records and cell.lossless == lossless and cell.window == window
    assert cell.design == (Design.ROUNDS, "requests interleave only at concurrency 1")
    assert cell.servers == {"vllm": "0.2"} and cell.cached_steps == {"download target": True}
    assert cell.cached_steps is not facts.cached_steps  # a snapshot: later steps do not change a kept cell


def test_the_outcome_names_the_cells_this_run_measured_and_the_servers_it_started():
    cells = [Cell(k=k, concurrency=c, speedup=1.0 + k / 10 - c / 10, speedup_low=0.98 + k / 10 - c / 10,
                  speedup_high=1.02 + k / 10 - c / 10,
                  spec_tok_s=None, base_tok_s=None, mean_acceptance_length=None, position_rates=None, run_uid=None,
                  status="ok") for k in (1, 2) for c in (1, 2)]
    served = (BASE_GROUP, ServerGroup(Series(1), (2,)), ServerGroup(Series(2), (1, 2)))
    sweep = replace(sweep_run(), run=RunDir(Path("/runs/x")), served=served)
    grid = SweepGrid(draft_lengths=[1, 2], concurrencies=[1, 2])
    best = best_k(cells)
    outcome = sweep_outcome(sweep, grid, cells, choose_k(cells), recommend(sweep.loaded, best), [])
    assert outcome.measured == ["k1-c2", "k2-c1", "k2-c2"]
    assert outcome.server_starts == {"base": 1, "speculative": 2}
    assert outcome.best == {1: 2, 2: None} and set(outcome.crossovers) == {"K=1", "K=2"} and outcome.run_dir == "/runs/x"
    assert outcome.overrides == ["benchmark.num_requests=4"] and "K \\ concurrency" in outcome.table
    nothing = sweep_outcome(replace(sweep, served=()), grid, cells, outcome.choices, outcome.recommendation, [])
    assert nothing.measured == [] and nothing.server_starts == {}


def test_a_setting_series_is_kept_under_its_own_key_and_a_plain_k_under_the_one_it_had():
    sweep = sweep_run()
    plain, setting = Series(4), Series(4, settings=("method.prompt_lookup_min=1", "method.prompt_lookup_max=5"))
    # A plain K series' key is what it was before series took settings: old caches keep serving it.
    assert sweep.key(plain, 1) == cell_key(sweep.loaded.sha256, list(sweep.overrides), 4, 1)
    assert sweep.key(setting, 1) == cell_key(sweep.loaded.sha256, [*sweep.overrides, *setting.settings], 4, 1)
    assert sweep.key(setting, 1) != sweep.key(plain, 1)
    other = Series(4, settings=("method.prompt_lookup_min=2", "method.prompt_lookup_max=5"))
    assert set(sweep.keys([plain, setting, other], [1])) == {("k4", 1), ("k4-min1-max5", 1), ("k4-min2-max5", 1)}
    assert plan_sweep([plain, setting, other], [1], {("k4-min1-max5", 1)}) == (
        ServerGroup(plain, (1,)), ServerGroup(other, (1,)))
