"""The specdec flow's sequencing: the results store is checked before anything is measured, the run holds its
host's lock while it measures (a CPU run too), and the lossless check compares what the base server said with
what the speculative server said. The steps that would download, build or serve are stand-ins that log what they
were asked; no server starts."""
from __future__ import annotations

from contextlib import contextmanager
from types import SimpleNamespace

import pytest
from prefect.logging import disable_run_logger

import flows.specdec as flow
from flows.finish import Finished
from prefect_adapters.slot_limits import Held
from specops.pipeline.check import compare_outputs, separate_check
from specops.pipeline.summarize import RunFacts
from specops.profile.loader import load_profile
from specops.results.model import Status
from specops.run.rundir import RunDir
from specops.sources.schemes import Models
from tests.results_factory import run_result

AIPERF = SimpleNamespace(name="aiperf", keeps_answers=True)
FAKE_BACKEND = SimpleNamespace(gpus=lambda: "none", tokenizer_dir=lambda target: "tokenizer", replays_here=lambda: False)


@pytest.fixture
def steps(monkeypatch, tmp_path) -> SimpleNamespace:
    """measure()'s steps as stand-ins; `said` is what each variant's server answers the check prompts."""
    log = SimpleNamespace(slots=[], compared=[], said={}, checked=[])

    @contextmanager
    def hold_slots(slots, holder, run=None):
        log.slots.append(slots)
        yield Held(names=list(slots.locks))

    @contextmanager
    def served_together(backend, group, repos, run, facts):
        yield [SimpleNamespace(variant=v, checked=lambda p, workload, answers, why, v=v: log.checked.append(
            (v.name, answers, why)) or separate_check(log.said[v.name], 8, why)) for v in group]

    def compare_check_outputs(base, speculative, run):
        log.compared.append((base.outputs, speculative.outputs))
        return compare_outputs(base.outputs, speculative.outputs)

    monkeypatch.setattr(flow, "cache_root", lambda: tmp_path / "cache")
    monkeypatch.setattr(flow, "prepare_models", lambda loaded, backend, run, cache, facts: Models("target", None, cache))
    monkeypatch.setattr(flow, "download_workload", lambda profile, target, cache, run: "the workload")
    monkeypatch.setattr(flow, "hold_slots", hold_slots)
    monkeypatch.setattr(flow, "variant_repository", lambda backend, v, models, run, facts: f"repo-{v.name}")
    monkeypatch.setattr(flow, "served_together", served_together)
    monkeypatch.setattr(flow, "measure_group", lambda *args: SimpleNamespace(records=[], design="d", why_not_requests=None,
                                                                             answers={"base": {0: "kept"}}))
    monkeypatch.setattr(flow, "compare_check_outputs", compare_check_outputs)
    return log


def test_the_lossless_check_compares_the_base_servers_outputs_with_the_speculative_servers(steps, tmp_path):
    steps.said = {"base": ["a", "b", "c", "d"], "speculative": ["a", "B", "c", "d"]}
    facts = RunFacts()
    flow.measure(load_profile("ngram-local"), FAKE_BACKEND, AIPERF, RunDir(tmp_path / "run"), facts)
    assert steps.compared == [(steps.said["base"], steps.said["speculative"])]
    # after the benchmark, each variant with the answers its tool kept (none for the speculative one here)
    assert [(name, answers) for name, answers, _ in steps.checked] == [("speculative", None), ("base", {0: "kept"})]
    assert not facts.lossless.valid and facts.lossless.mismatches == 1 and facts.lossless.first.prompt_index == 1


def test_a_cpu_run_measures_holding_its_hosts_lock(steps, tmp_path):
    steps.said = {"base": ["a"], "speculative": ["a"]}
    facts = RunFacts()
    flow.measure(load_profile("ngram-local"), FAKE_BACKEND, AIPERF, RunDir(tmp_path / "run"), facts)
    (slots,) = steps.slots
    assert slots.locks and all(lock.startswith("cpu:") for lock in slots.locks)
    assert facts.window.slots == slots.locks and facts.lossless.valid


def test_a_results_store_that_takes_no_rows_fails_the_run_before_anything_is_measured(monkeypatch, tmp_path):
    measured = []
    unusable = tmp_path / "a-directory-not-a-database"
    unusable.mkdir()
    monkeypatch.setenv("SPECOPS_RESULTS_URL", f"sqlite:///{unusable}")
    monkeypatch.setenv("SPECOPS_ARTIFACTS", str(tmp_path / "artifacts"))
    monkeypatch.setattr(flow, "create_run_dir", lambda loaded, run_id, role: RunDir.create(loaded.profile.name, run_id))
    monkeypatch.setattr(flow, "check_prerequisites", lambda backend, tool, run: None)
    monkeypatch.setattr(flow, "check_result_storage", flow.check_result_storage.fn)  # the real check, not a task
    monkeypatch.setattr(flow, "measure", lambda *args: measured.append(args))
    monkeypatch.setattr(flow, "summarize_run", lambda loaded, run, backend, tool, facts, error=None, role=None:
                        run_result(status=Status.FAILED if error else Status.OK))
    monkeypatch.setattr(flow, "set_final_status", lambda run, result: None)
    monkeypatch.setattr(flow, "finish", lambda result, run: Finished(result, run.path / "report.md", None))
    with disable_run_logger(), pytest.raises(flow.RunFailed) as failed:
        flow.specdec.fn("ngram-local", [], "r1")
    assert measured == []
    assert "cannot open the results database" in str(failed.value.__cause__)
