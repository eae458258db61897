"""The sweep flow runs its plan: the cells kept before are read back and not measured again, the models are
prepared once per sweep run (not at all when every cell was kept), the base's server starts once, at the first
missing cell, and stays up; each planned server is served once, compared with the base's outputs, and measures
its cells beside the base; a results store that takes no rows stops it before any model or server. The tasks are
fakes that log what they were asked; no server starts."""
from __future__ import annotations

from contextlib import ExitStack, contextmanager
from dataclasses import replace
from types import SimpleNamespace

import pytest
from prefect.logging import disable_run_logger

import flows.sweep as flow
from flows.finish import Finished
from prefect_adapters.slot_limits import Held
from specops.backends.base import PrerequisiteError
from specops.pipeline.summarize import RunFacts
from specops.profile.loader import load_profile
from specops.results.model import VariantRecord
from specops.results.paired import Design
from specops.run.rundir import RunDir
from specops.sources.schemes import Models
from specops.sweep.cells import CellStore
from specops.sweep.grid import Series
from specops.sweep.plan import BASE_GROUP, ServerGroup, SweepRun
from tasks.profile import check_result_storage
from tests.results_factory import run_result

CS = [1, 2]


@pytest.fixture
def sweep(tmp_path) -> SweepRun:
    backend = SimpleNamespace(gpus=lambda: [], tokenizer_dir=lambda target: f"{target}/tokenizer",
                              replays_here=lambda: False)
    return SweepRun(load_profile("ngram-local"), (), backend, "tool", RunDir(tmp_path), CellStore(tmp_path / "cells"))


@pytest.fixture
def log(monkeypatch) -> list[tuple]:
    """The series' steps as fakes: kept cells from `kept`, measured ones as the plan asks."""
    calls: list[tuple] = []
    kept = {("k1", 1): run_result(uid="kept-1-1")}

    def find_measured_cells(store, keys):
        calls.append(("find", sorted(keys)))
        return {kc: r for kc, r in kept.items() if kc in keys}

    def measure_server(sweep, group, servers):
        servers.base = servers.base or calls.append(("base up",)) or "base"
        calls.append(("serve", group.series.name, group.concurrencies, sweep.models.target))
        return {c: run_result(uid=f"{group.series.name}-{c}") for c in group.concurrencies}

    monkeypatch.setattr(flow, "find_measured_cells", find_measured_cells)
    monkeypatch.setattr(flow, "measure_server", measure_server)
    monkeypatch.setattr(flow, "check_prerequisites", lambda backend, tool, run: calls.append(("prerequisites",)))
    monkeypatch.setattr(flow, "check_result_storage", lambda run, name: None)
    monkeypatch.setattr(flow, "prepare_models", lambda loaded, backend, run, cache, facts:
                        calls.append(("prepare",)) or Models("target", None, cache))
    monkeypatch.setattr(flow, "download_workload", lambda profile, target, cache, run: "the workload")
    return calls


def test_a_sweep_run_again_measures_only_the_cells_it_lacks_and_prepares_once(sweep, log):
    servers = flow.SweepServers(ExitStack())
    cells, after = flow.measure_series(sweep, [Series(1), Series(2)], CS, servers)
    assert [(c.k, c.concurrency, c.run_uid) for c in cells] == [(1, 1, "kept-1-1"), (1, 2, "k1-2"), (2, 1, "k2-1"),
                                                                (2, 2, "k2-2")]
    assert log == [("find", [("k1", 1), ("k1", 2), ("k2", 1), ("k2", 2)]), ("prerequisites",), ("prepare",), ("base up",),
                   ("serve", "k1", (2,), "target"), ("serve", "k2", (1, 2), "target")]
    assert after.served == (BASE_GROUP, ServerGroup(Series(1), (2,)), ServerGroup(Series(2), (1, 2)))
    assert after.tokenizer == "target/tokenizer"
    assert sweep.served == () and sweep.models is None  # the run before is left as it was

    log.clear()
    schedule = Series(2, ("x=1",))
    cells, last = flow.measure_series(after, [schedule], CS, servers)
    # no prepare, and the base still up: not started again
    assert log == [("find", [("schedule", 1), ("schedule", 2)]), ("serve", "schedule", (1, 2), "target")]
    assert [c.run_uid for c in cells] == ["schedule-1", "schedule-2"]
    assert last.served == (*after.served, ServerGroup(schedule, (1, 2)))


def test_a_sweep_whose_cells_were_all_kept_prepares_nothing_and_starts_nothing(sweep, log):
    cells, after = flow.measure_series(sweep, [Series(1)], [1], flow.SweepServers(ExitStack()))
    assert [c.run_uid for c in cells] == ["kept-1-1"] and log == [("find", [("k1", 1)])]
    assert after.served == () and after.models is None


@pytest.fixture
def served(monkeypatch) -> list[tuple]:
    """measure_server's tasks as fakes; what each was asked, in order."""
    calls: list[tuple] = []

    @contextmanager
    def serve(backend, variant, repo, run, facts):
        calls.append(("up", variant.name, run.path.name, repo))
        facts.servers["fake-server"] = "1.0"
        yield SimpleNamespace(name=variant.name, check=lambda profile, workload: [f"{variant.name} outputs"])
        calls.append(("down", variant.name))

    @contextmanager
    def hold_slots(slots, holder, run=None):
        calls.append(("hold",))
        yield Held(names=["gpu:0"])

    def measure_group(group, tool, tokenizer, bench, prompts, run, min_rounds):
        where = run.path.relative_to(run.path.parents[1]).as_posix()
        calls.append(("measure", where, [s.name for s in group], bench.concurrency, min_rounds))
        paired = bench.concurrency == 1  # as for a tool that interleaves requests at concurrency 1 only
        return SimpleNamespace(records=[VariantRecord(name=s.name, method="m", model=where) for s in group],
                               design=Design.REQUESTS if paired else Design.ROUNDS,
                               why_not_requests=None if paired else "concurrency 2",
                               rounds=bench.rounds if paired else max(bench.rounds, min_rounds))

    monkeypatch.setattr(flow, "variant_repository", lambda backend, v, models, run: f"repo-{v.name}")
    monkeypatch.setattr(flow, "served", serve)
    monkeypatch.setattr(flow, "hold_slots", hold_slots)
    monkeypatch.setattr(flow, "measure_group", measure_group)
    monkeypatch.setattr(flow, "compare_check_outputs", lambda base, spec, run: calls.append(("compare", base.outputs, spec.outputs))
                        or "lossless")
    monkeypatch.setattr(flow, "summarize_run", lambda cell, run, backend, tool, facts, role: calls.append(
        ("summarize", cell.profile.method.num_speculative_tokens, cell.profile.benchmark.concurrency,
         cell.profile.benchmark.rounds, facts, role)) or run_result(uid=f"{run.path.name}"))
    monkeypatch.setattr(flow, "finish", lambda result, run: calls.append(("finish", result.uid))
                        or Finished(result, run.path / "report.md", None))
    monkeypatch.setattr(flow, "set_final_status", lambda run, result: None)
    monkeypatch.setattr(flow, "keep_cell", lambda store, key, result: calls.append(("keep", key, result.uid)))
    monkeypatch.setattr(flow, "predict_acceptance", lambda loaded, backend, run, workload: calls.append(
        ("predict", loaded.profile.method.num_speculative_tokens)) or f"replay of K={calls[-1][1]}")
    # each cell's price of its series' one replay: at the cell's own concurrency
    monkeypatch.setattr(flow, "priced_at", lambda predicted, cell: (predicted, cell.profile.benchmark.concurrency))
    return calls


def test_the_base_starts_once_and_each_cell_is_measured_beside_it_with_its_own_pairing(sweep, served):
    sweep = replace(sweep, models=Models("target", None, "cache"), tokenizer="tok", facts=RunFacts())
    with ExitStack() as stack:
        servers = flow.SweepServers(stack)
        results = flow.measure_server(sweep, ServerGroup(Series(3), (1, 2)), servers)
        assert served[:5] == [("hold",), ("up", "base", "base", "repo-base"), ("predict", 3),
                              ("up", "speculative", "k3", "repo-speculative"),
                              ("compare", ["base outputs"], ["speculative outputs"])]
        # speculative first, the base beside it, in each cell; at least CELL_ROUNDS where requests cannot pair
        assert [call for call in served if call[0] == "measure"] == [
            ("measure", "k3/c1", ["speculative", "base"], 1, flow.CELL_ROUNDS),
            ("measure", "k3/c2", ["speculative", "base"], 2, flow.CELL_ROUNDS)]
        flow.measure_server(sweep, ServerGroup(Series(4), (1,)), servers)
        assert served.count(("hold",)) == 1 and served.count(("up", "base", "base", "repo-base")) == 1
        assert ("down", "base") not in served and ("down", "speculative") in served
    assert served[-1] == ("down", "base")  # down when the flow's stack closes, after every cell
    summaries = [call for call in served if call[0] == "summarize"]
    assert [(k, c, rounds) for _, k, c, rounds, _, _ in summaries] == [(3, 1, 1), (3, 2, flow.CELL_ROUNDS), (4, 1, 1)]
    facts, role = summaries[1][4], summaries[1][5]
    assert [v.name for v in facts.variants] == ["speculative", "base"] and facts.variants[1].model == "k3/c2"
    assert facts.design == (Design.ROUNDS, "concurrency 2") and summaries[0][4].design == (Design.REQUESTS, None)
    assert facts.lossless == "lossless" and facts.window.slots == ["gpu:0"]
    # the replay's figures once per draft length, before its server takes the cores, in each of its cells
    assert [call for call in served if call[0] == "predict"] == [("predict", 3), ("predict", 4)]
    assert (facts.predicted, summaries[0][4].predicted) == (("replay of K=3", 2), ("replay of K=3", 1))
    assert role.series == "k3" and role.of == str(sweep.run.path)
    assert ("keep", sweep.key(Series(3), 2), "c2") in served and [r.uid for r in results.values()] == ["c1", "c2"]


def test_a_results_store_that_takes_no_rows_stops_the_sweep_before_models_or_servers(sweep, log, monkeypatch,
                                                                                     tmp_path):
    unusable = tmp_path / "a-directory-not-a-database"
    unusable.mkdir()
    monkeypatch.setenv("SPECOPS_RESULTS_URL", f"sqlite:///{unusable}")
    monkeypatch.setattr(flow, "check_result_storage", check_result_storage.fn)  # the real check, not a task
    with disable_run_logger(), pytest.raises(PrerequisiteError, match="cannot open the results database"):
        flow.measure_series(sweep, [Series(1)], CS, flow.SweepServers(ExitStack()))
    assert [call[0] for call in log] == ["find", "prerequisites"]  # nothing prepared, started or served


def test_settings_of_one_k_are_servers_of_their_own_and_their_cells_carry_the_setting(sweep, log):
    knobs = [("method.prompt_lookup_min=1", "method.prompt_lookup_max=5"), ("method.prompt_lookup_min=2",
                                                                           "method.prompt_lookup_max=5")]
    series = [Series(4, settings=knobs[0]), Series(4, settings=knobs[1])]
    cells, _ = flow.measure_series(sweep, series, [1], flow.SweepServers(ExitStack()))
    assert [(c.k, c.setting, c.run_uid) for c in cells] == [(4, knobs[0], "k4-min1-max5-1"),
                                                            (4, knobs[1], "k4-min2-max5-1")]
    assert [entry[1] for entry in log if entry[0] == "serve"] == ["k4-min1-max5", "k4-min2-max5"]
