"""The run's status follows its verdict and the profile's require_lossless, through run_result itself; its speedup
is the speculative variant's over the base's."""
from __future__ import annotations

import pytest

from specops.pipeline.backend import backend_for, tool_for
from specops.pipeline.summarize import RunFacts, run_result, status_of
from specops.profile.loader import load_profile
from specops.results.metrics import BenchMetrics, RequestSample
from specops.results.model import Divergence, Lossless, Status, VariantRecord, Verdict
from specops.results.paired import Design
from specops.run.rundir import RunDir

DIFFERING = Lossless(compared=2, mismatches=1, first=Divergence(prompt_index=1, position=3, base="abc",
                                                                speculative="abd"))


@pytest.mark.parametrize(("verdict", "require", "status"), [
    (Verdict.VALID, True, Status.OK), (Verdict.VALID, False, Status.OK),
    (Verdict.UNCHECKED, True, Status.OK), (Verdict.UNCHECKED, False, Status.OK),
    (Verdict.INVALID, True, Status.INVALID), (Verdict.INVALID, False, Status.OK),
    (Verdict.FAILED, True, Status.FAILED), (Verdict.FAILED, False, Status.FAILED),
    (Verdict.INTERRUPTED, True, Status.INTERRUPTED),
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


@pytest.mark.parametrize(("error", "status", "said"), [
    (KeyboardInterrupt("signal 15"), Status.INTERRUPTED, "interrupted at download: KeyboardInterrupt: signal 15"),
    (RuntimeError("no room"), Status.FAILED, "failed at download: RuntimeError: no room"),
])
def test_a_run_ended_from_outside_is_interrupted_and_a_step_that_raised_failed(tmp_path, monkeypatch, error, status,
                                                                                said):
    monkeypatch.setenv("SPECOPS_ARTIFACTS", str(tmp_path))
    loaded = load_profile("ngram-local")
    run = RunDir.create("ngram-local", "r")
    with pytest.raises(type(error)), run.timed("download", ""):
        raise error
    result = run_result(loaded, run, backend_for(loaded.profile), tool_for(loaded.profile), RunFacts(), error)
    assert result.status is status and result.verdict.value == status.value.upper()
    assert result.reasons == [said] and result.failure.step == "download"


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
    # each prompt's base seconds over its speculative ones, whatever the design
    assert s.per_prompt.by_prompt == pytest.approx({0: 1.3, 1: 1.4 / 1.1, 2: 1.2 / 0.9, 3: 1.5 / 1.2})
    if unit:  # interleaved requests: the prompts are the units, so one round has an interval
        assert s.resampled.startswith(unit) and s.low < s.point < s.high
    else:  # one round block per variant: no interval, and the record says why the run was not interleaved
        assert (s.low, s.high) == (None, None) and result.benchmark.design_note == "genai-perf drives one server per run"


SUFFIX_ON = "method.max_cached_requests=100"


@pytest.mark.parametrize(("overrides", "primed"), [
    # HumanEval has 164 prompts: from 160, 4 warm-up + 4 measured requests wrap around onto the warm-up's prompts
    ((SUFFIX_ON, "benchmark.prompt_offset=160", "benchmark.warmup_requests=4"), ["4 warm-up + 4 measured"]),
    ((SUFFIX_ON, "benchmark.rounds=2"), ["2 rounds"]),
    # measured 0-162: the check takes the first two, none being left after them
    ((SUFFIX_ON, "benchmark.num_requests=163", "benchmark.warmup_requests=0"), ["lossless check's 2 prompts"]),
    ((SUFFIX_ON, "benchmark.warmup_requests=4"), []),  # warm-up on prompts 0-3, measured 4-7, checked 8-9
    (("benchmark.prompt_offset=160", "benchmark.warmup_requests=4", "benchmark.rounds=2"), []),  # cache off
])
def test_a_drafter_cache_primed_with_the_measured_prompts_is_flagged_in_the_report(overrides, primed, tmp_path):
    from specops.pipeline.summarize import drafter_cache
    from specops.profile.workload import workload_for
    from specops.report.tables import cache_lines
    from tests.results_factory import run_result as recorded

    profile = load_profile("suffix-vllm-serve-cpu", ["benchmark.num_requests=4", "comparison.lossless_prompts=2",
                                                     *overrides]).profile
    cache = drafter_cache(profile, workload_for(profile, tmp_path))
    assert (cache.on, cache.max_cached_requests) == ((True, 100) if SUFFIX_ON in overrides else (False, 0))
    assert len(cache.primed) == len(primed) and all(w in why for w, why in zip(primed, cache.primed))
    lines = cache_lines(recorded().model_copy(update={"drafter_cache": cache}))
    assert ("drafter cache primed" in lines[0]) is bool(primed)
    ngram = load_profile("ngram-local").profile
    assert drafter_cache(ngram, workload_for(ngram, tmp_path)) is None  # no cross-request cache: nothing to record


def test_a_faster_speculative_variant_is_a_speedup_above_one_in_both_figures(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECOPS_ARTIFACTS", str(tmp_path))
    loaded = load_profile("ngram-local")

    def measured(name: str, seconds: float, tok_s: float) -> VariantRecord:
        metrics = BenchMetrics(output_token_throughput_tok_s=tok_s, request_throughput_req_s=1.0,
                               request_latency_ms_avg=1000 * seconds, request_latency_ms_p50=1000 * seconds,
                               request_latency_ms_p99=1000 * seconds, output_sequence_length_avg=10, request_count=4)
        return _variant(name, [seconds] * 4).model_copy(update={"metrics": metrics})

    facts = RunFacts(variants=[measured("base", 1.5, 20.0), measured("speculative", 1.0, 30.0)],
                     design=(Design.REQUESTS, None))
    result = run_result(loaded, RunDir.create("ngram-local", "r"), backend_for(loaded.profile),
                        tool_for(loaded.profile), facts)
    # speculative over base, whichever order the variants were recorded in
    assert result.speedup.point == pytest.approx(1.5) and result.speedup.throughput_ratio == pytest.approx(1.5)
