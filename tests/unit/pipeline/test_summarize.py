"""The run's status follows its verdict and the profile's require_lossless, through run_result itself."""
from __future__ import annotations

import pytest

from specops.pipeline.backend import backend_for, tool_for
from specops.pipeline.summarize import RunFacts, run_result, status_of
from specops.profile.loader import load_profile
from specops.results.metrics import RequestSample
from specops.results.model import Design, Divergence, Lossless, Status, VariantRecord, Verdict
from specops.run.rundir import RunDir

DIFFERING = Lossless(compared=2, mismatches=1, first=Divergence(prompt_index=1, position=3, base="abc",
                                                                speculative="abd"))


@pytest.mark.parametrize(("verdict", "require", "status"), [
    (Verdict.VALID, True, Status.OK), (Verdict.VALID, False, Status.OK),
    (Verdict.UNCHECKED, True, Status.OK), (Verdict.UNCHECKED, False, Status.OK),
    (Verdict.INVALID, True, Status.INVALID), (Verdict.INVALID, False, Status.OK),
    (Verdict.FAILED, True, Status.FAILED), (Verdict.FAILED, False, Status.FAILED),
])
def test_status_of_each_verdict(verdict, require, status):
    assert status_of(verdict, require) is status


@pytest.mark.parametrize(("require", "status"), [(True, Status.INVALID), (False, Status.OK)])
def test_a_run_whose_outputs_differ_is_invalid_only_where_the_profile_requires_lossless(
        tmp_path, monkeypatch, require, status):
    monkeypatch.setenv("SPECOPS_ARTIFACTS", str(tmp_path))
    loaded = load_profile("ngram-local", [f"comparison.require_lossless={str(require).lower()}"])
    run = RunDir.create("ngram-local", "r")
    result = run_result(loaded, run, backend_for(loaded.profile), tool_for(loaded.profile),
                        RunFacts(lossless=DIFFERING))
    assert result.verdict is Verdict.INVALID and result.status is status
    assert "1/2 prompts differ" in result.reasons[-1]


def _variant(name: str, seconds: list[float]) -> VariantRecord:
    samples = [RequestSample(prompt=p, round=0, latency_s=s, output_tokens=10) for p, s in enumerate(seconds)]
    return VariantRecord(name=name, method="ngram" if name == "speculative" else "none", model=name, samples=samples)


@pytest.mark.parametrize(("design", "unit"), [(Design.REQUESTS, "prompts"), (Design.ROUNDS, None)])
def test_the_run_pairs_its_speedup_in_the_design_it_was_measured_in(tmp_path, monkeypatch, design, unit):
    monkeypatch.setenv("SPECOPS_ARTIFACTS", str(tmp_path))
    loaded = load_profile("ngram-local")
    facts = RunFacts(variants=[_variant("speculative", [1.0, 1.1, 0.9, 1.2]), _variant("base", [1.3, 1.4, 1.2, 1.5])],
                     design=(design, None if unit else "genai-perf drives one server per run"))
    result = run_result(loaded, RunDir.create("ngram-local", "r"), backend_for(loaded.profile),
                        tool_for(loaded.profile), facts)
    s = result.speedup
    assert (s.design, result.benchmark.design) == (design, design)
    if unit:  # interleaved requests: the prompts are the units, so one round has an interval
        assert s.resampled.startswith(unit) and s.low < s.point < s.high
    else:  # one round block per variant: no interval, and the record says why the run was not interleaved
        assert (s.low, s.high) == (None, None) and result.benchmark.design_note == "genai-perf drives one server per run"
