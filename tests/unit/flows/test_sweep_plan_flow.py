"""The sweep flow runs its plan: the cells kept before are read back and not measured again, the models are
prepared once per sweep run (not at all when every cell was kept), each planned server is served once and
measures its cells, a speculative cell is compared with the first base's outputs and summarized with its own
base cell. The tasks are fakes that log what they were asked; no server starts."""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import replace
from types import SimpleNamespace

import pytest

import flows.sweep as flow
from prefect_adapters.slot_limits import Held
from specops.pipeline.summarize import RunFacts
from specops.profile.loader import load_profile
from specops.results.model import VariantRecord
from specops.run.rundir import RunDir
from specops.sweep.cells import BaseCell, CellStore
from specops.sweep.grid import BASE_SERIES, Series
from specops.sweep.plan import ServerGroup, SweepRun
from tests.results_factory import run_result

CS = [1, 2]


def base_cell(c: int) -> BaseCell:
    return BaseCell(concurrency=c, variant=VariantRecord(name="base", method="none", model="m"),
                    outputs=[f"base outputs at {c}"], servers={"fake-server": "0.9"})


@pytest.fixture
def sweep(tmp_path) -> SweepRun:
    backend = SimpleNamespace(gpus=lambda: [], tokenizer_dir=lambda target: f"{target}/tokenizer")
    return SweepRun(load_profile("ngram-local"), (), backend, "tool", RunDir(tmp_path), CellStore(tmp_path / "cells"))


@pytest.fixture
def log(monkeypatch) -> list[tuple]:
    """The series' steps as fakes: kept cells from `kept`, measured ones as the plan asks."""
    calls: list[tuple] = []
    kept = {"results": {(1, 1): run_result(uid="kept-1-1")}, "bases": {1: base_cell(1)}}

    def find_measured_cells(store, keys):
        calls.append(("find", sorted(keys, key=str)))
        return ({kc: r for kc, r in kept["results"].items() if kc in keys},
                {c: b for c, b in kept["bases"].items() if (None, c) in keys})

    def measure_server(sweep, group, bases, held):
        calls.append(("serve", group.series.name, group.concurrencies, sweep.target))
        if group.series == BASE_SERIES:
            return {c: base_cell(c) for c in group.concurrencies}
        assert all(c in bases for c in group.concurrencies)  # each cell has its base cell to compare with
        return {c: run_result(uid=f"{group.series.name}-{c}") for c in group.concurrencies}

    @contextmanager
    def hold_slots(slots, holder, run=None):
        calls.append(("hold",))
        yield Held(names=[])

    monkeypatch.setattr(flow, "find_measured_cells", find_measured_cells)
    monkeypatch.setattr(flow, "measure_server", measure_server)
    monkeypatch.setattr(flow, "hold_slots", hold_slots)
    monkeypatch.setattr(flow, "check_prerequisites", lambda backend, tool, run: calls.append(("prerequisites",)))
    monkeypatch.setattr(flow, "check_result_storage", lambda run, name: None)
    monkeypatch.setattr(flow, "prepare_models", lambda loaded, backend, run, cache, facts:
                        calls.append(("prepare",)) or ("target", None))
    return calls


def test_a_sweep_run_again_measures_only_the_cells_it_lacks_and_prepares_once(sweep, log):
    cells, after = flow.measure_series(sweep, [Series(1), Series(2)], CS)
    assert [(c.k, c.concurrency, c.run_uid) for c in cells] == [(1, 1, "kept-1-1"), (1, 2, "k1-2"), (2, 1, "k2-1"),
                                                                (2, 2, "k2-2")]
    assert log[0] == ("find", sorted([(None, 1), (None, 2), (1, 1), (1, 2), (2, 1), (2, 2)], key=str))
    assert log[1:] == [("prerequisites",), ("prepare",), ("hold",), ("serve", "base", (2,), "target"),
                       ("serve", "k1", (2,), "target"), ("serve", "k2", (1, 2), "target")]
    assert after.served == (ServerGroup(BASE_SERIES, (2,)), ServerGroup(Series(1), (2,)),
                            ServerGroup(Series(2), (1, 2)))
    assert list(after.bases) == [1, 2] and after.tokenizer == "target/tokenizer"
    assert sweep.served == () and sweep.target is None  # the run before is left as it was

    log.clear()
    schedule = Series(2, ("x=1",))
    cells, last = flow.measure_series(after, [schedule], CS)
    assert log == [("find", [(2, 1), (2, 2)]), ("hold",), ("serve", "schedule", (1, 2), "target")]  # no prepare
    assert [c.run_uid for c in cells] == ["schedule-1", "schedule-2"]
    assert last.served == (*after.served, ServerGroup(schedule, (1, 2)))


def test_a_sweep_whose_cells_were_all_kept_prepares_nothing_and_holds_nothing(sweep, log):
    cells, after = flow.measure_series(sweep, [Series(1)], [1])
    assert [c.run_uid for c in cells] == ["kept-1-1"] and log == [("find", [(1, 1), (None, 1)])]
    assert after.served == () and after.target is None and after.bases == {1: base_cell(1)}


@pytest.fixture
def served(monkeypatch) -> list[tuple]:
    """measure_server's tasks as fakes; what each was asked, in order."""
    calls: list[tuple] = []

    @contextmanager
    def serve(backend, variant, repo, run, facts):
        calls.append(("up", variant.name, run.path.name, repo))
        facts.servers["fake-server"] = "1.0"
        yield SimpleNamespace(check=lambda profile: [f"{variant.name} outputs"])

    def measure_group(group, tool, tokenizer, bench, prompts, run):
        calls.append(("measure", run.path.relative_to(run.path.parents[1]).as_posix(), bench.concurrency, tokenizer))
        return SimpleNamespace(records=[VariantRecord(name="rec", method="m", model=str(bench.concurrency))])

    monkeypatch.setattr(flow, "build_engine", lambda backend, v, target, draft, cache, run: SimpleNamespace(value=1))
    monkeypatch.setattr(flow, "render_repository", lambda backend, v, target, draft, cache, engines, run:
                        SimpleNamespace(value=f"repo-{v.name}"))
    monkeypatch.setattr(flow, "served", serve)
    monkeypatch.setattr(flow, "measure_group", measure_group)
    monkeypatch.setattr(flow, "compare_check_outputs", lambda base, spec, run: calls.append(("compare", base, spec))
                        or "lossless")
    monkeypatch.setattr(flow, "summarize_run", lambda cell, run, backend, tool, facts, role: calls.append(
        ("summarize", cell.profile.method.num_speculative_tokens, cell.profile.benchmark.concurrency, facts, role))
        or run_result(uid=f"{run.path.name}"))
    monkeypatch.setattr(flow, "finish", lambda result, run: calls.append(("finish", result.uid)))
    monkeypatch.setattr(flow, "set_final_status", lambda run, result: None)
    monkeypatch.setattr(flow, "keep_cell", lambda store, key, result: calls.append(("keep", key, result.uid)))
    monkeypatch.setattr(flow, "keep_base_cell", lambda store, key, cell: calls.append(("keep base", key, cell)))
    return calls


def test_a_base_server_keeps_each_concurrency_as_a_base_cell(sweep, served):
    sweep = replace(sweep, target="target", tokenizer="tok", facts=RunFacts())
    cells = flow.measure_server(sweep, ServerGroup(BASE_SERIES, (1, 2)), {}, Held(names=[]))
    assert served[0] == ("up", "base", "base", "repo-base")
    assert [call[:3] for call in served[1:] if call[0] == "measure"] == [("measure", "base/c1", 1),
                                                                          ("measure", "base/c2", 2)]
    assert cells[2].outputs == ["base outputs"] and cells[2].servers == {"fake-server": "1.0"}
    assert ("keep base", sweep.key(BASE_SERIES, 2), cells[2]) in served


def test_a_speculative_server_compares_with_the_first_base_and_sums_up_each_cell_against_its_own(sweep, served):
    sweep = replace(sweep, target="target", tokenizer="tok", facts=RunFacts())
    bases = {2: base_cell(2), 1: base_cell(1)}
    results = flow.measure_server(sweep, ServerGroup(Series(3), (1, 2)), bases, Held(names=["gpu:0"]))
    assert served[:2] == [("up", "speculative", "k3", "repo-speculative"),
                          ("compare", ["base outputs at 2"], ["speculative outputs"])]
    summaries = [call for call in served if call[0] == "summarize"]
    assert [(k, c) for _, k, c, _, _ in summaries] == [(3, 1), (3, 2)]
    facts, role = summaries[0][3], summaries[0][4]
    assert facts.variants[1] == bases[1].variant and facts.lossless == "lossless" and facts.window.slots == ["gpu:0"]
    assert role.series == "k3" and role.of == str(sweep.run.path)
    assert ("keep", sweep.key(Series(3), 2), "c2") in served and [r.uid for r in results.values()] == ["c1", "c2"]
