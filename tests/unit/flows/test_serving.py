"""The serving seam: a served variant is always stopped (quietly on an error, loudly on success), its
measurement alternates the group's rounds and its acceptance covers its own rounds only."""
from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest

import flows.serving as seam
from specops.acceptance.model import Acceptance
from specops.pipeline.check import Pace
from specops.pipeline.summarize import RunFacts
from specops.profile.schema import Benchmark
from specops.results.paired import Design
from specops.run.rundir import RunDir
from specops.run.variant import BASE, SPECULATIVE, Variant, base_method


class FakeServer:
    def __init__(self, name: str):
        self.name = name

    def version(self):
        return "fake-server", "1.0"


@pytest.fixture
def calls(monkeypatch):
    """The tasks the seam sequences, replaced by fakes that log what they were asked."""
    log: list[tuple] = []
    stop_errors: dict[str, Exception] = {}
    counters: dict[str, list[Acceptance | None]] = {}

    def stop_server(server, timeout_s, run, variant):
        log.append(("stop", variant.name, timeout_s))
        if variant.name in stop_errors:
            raise stop_errors[variant.name]

    monkeypatch.setattr(seam, "start_server", lambda backend, v, repo, run: log.append(("start", v.name))
                        or FakeServer(v.name))
    monkeypatch.setattr(seam, "stop_server", stop_server)
    monkeypatch.setattr(seam, "send_smoke_request", lambda backend, server, v, run: log.append(("smoke", v.name))
                        or Pace(1.0, 10))
    monkeypatch.setattr(seam, "generate_check_outputs", lambda backend, server, v, prompts, max_tokens, run, chat:
                        (log.append(("check", v.name, prompts, chat)) or [f"{v.name} says"], Pace(2.0, 10)))
    monkeypatch.setattr(seam, "benchmark_round", lambda tool, backend, server, v, tokenizer, bench, prompts, run, r,
                        pace: log.append(("round", v.name, r, pace.per_token_s)) or Round(f"{v.name}-{r}"))
    monkeypatch.setattr(seam, "read_acceptance", lambda backend, server, v, settle: counters[v.name].pop(0))
    monkeypatch.setattr(seam, "record_answers", lambda workload, measured, v, run: None)
    monkeypatch.setattr(seam, "variant_record", lambda v, rounds, acceptance: (v.name, rounds, acceptance))
    monkeypatch.setattr(seam, "bench_job", lambda tool, backend, server, v, tokenizer, bench, prompts, path, r, pace:
                        SimpleNamespace(variant=v.name, round=r))
    design = SimpleNamespace(chosen=(Design.ROUNDS, "the fake tool drives one server per run"))
    monkeypatch.setattr(seam, "choose_design", lambda tool, jobs, pairing: design.chosen)
    monkeypatch.setattr(seam, "benchmark_interleaved_round", lambda tool, servers, jobs, run, r, rounds:
                        log.append(("interleaved", [j.variant for j in jobs], r, rounds))
                        or [Round(f"{j.variant}-{r}") for j in jobs])
    return SimpleNamespace(log=log, stop_errors=stop_errors, counters=counters, design=design)


class Round(str):
    """A measured round as the fakes give it: its name, and the answers its tool kept (none)."""

    run = SimpleNamespace(answers={})


BACKEND = SimpleNamespace(serving=SimpleNamespace(stop_timeout_s=7.0))
BENCH = SimpleNamespace(rounds=2, pairing="auto")
RUN = SimpleNamespace(path="run")
PROFILE = SimpleNamespace(comparison=SimpleNamespace(baseline=True, lossless_max_tokens=8), benchmark=None)
BASE_V, SPEC_V = Variant(BASE, base_method()), Variant(SPECULATIVE, base_method())


# The check sends the workload's check prompts as the benchmark sends its own (chat here)
WORKLOAD = SimpleNamespace(check=["p"], chat=True)


def test_served_smokes_records_the_server_and_stops_it(calls):
    facts = RunFacts()
    with seam.served(BACKEND, BASE_V, "repo", "run", facts) as up:
        assert up.check(PROFILE, WORKLOAD) == ["base says"]
        assert calls.log[-1] == ("check", BASE, ["p"], True)
    assert up.pace == Pace(3.0, 20)  # smoke and check: what the benchmark's time bound is derived from
    assert facts.servers == {"fake-server": "1.0"}
    assert calls.log == [("start", BASE), ("smoke", BASE), ("check", BASE, ["p"], True), ("stop", BASE, 7.0)]


def test_without_a_baseline_nothing_is_checked(calls):
    unchecked = SimpleNamespace(comparison=SimpleNamespace(baseline=False))
    with seam.served(BACKEND, BASE_V, "repo", "run", smoke=False) as up:
        assert up.check(unchecked, WORKLOAD) == [] and up.pace is None
    assert calls.log == [("start", BASE), ("stop", BASE, 7.0)]


def test_an_error_stops_the_server_and_a_failing_stop_does_not_hide_it(calls):
    calls.stop_errors[BASE] = RuntimeError("ports still bound")
    with pytest.raises(KeyError, match="what went wrong"), seam.served(BACKEND, BASE_V, "repo", "run"):
        raise KeyError("what went wrong")
    assert calls.log[-1] == ("stop", BASE, 7.0)


def test_an_interrupt_stops_the_server(calls):
    with pytest.raises(KeyboardInterrupt), seam.served(BACKEND, BASE_V, "repo", "run"):
        raise KeyboardInterrupt
    assert calls.log[-1] == ("stop", BASE, 7.0)


def test_a_failing_smoke_stops_the_server(calls, monkeypatch):
    monkeypatch.setattr(seam, "send_smoke_request", lambda *a: (_ for _ in ()).throw(RuntimeError("no answer")))
    with pytest.raises(RuntimeError, match="no answer"), seam.served(BACKEND, BASE_V, "repo", "run"):
        raise AssertionError("never reached")
    assert calls.log == [("start", BASE), ("stop", BASE, 7.0)]


def test_on_success_a_failing_stop_fails(calls):
    calls.stop_errors[BASE] = RuntimeError("ports still bound")
    with pytest.raises(RuntimeError, match="ports still bound"), seam.served(BACKEND, BASE_V, "repo", "run"):
        pass


REPOS = {BASE: "repo-b", SPECULATIVE: "repo-s"}


def _slow_starts(monkeypatch, calls, fail: str | None = None):
    """Starts that take 0.3 s each and say when they began and ended; `fail` names one that raises."""
    lock = threading.Lock()

    def start(backend, v, repo, run):
        with lock:
            calls.log.append(("start", v.name, repo))
        time.sleep(0.3)
        with lock:
            calls.log.append(("up", v.name))
        if v.name == fail:
            raise RuntimeError(f"{v.name} never got ready")
        return FakeServer(v.name)
    monkeypatch.setattr(seam, "start_server", start)


def test_a_groups_servers_start_side_by_side_then_each_is_smoked_and_stopped(calls, monkeypatch):
    _slow_starts(monkeypatch, calls)
    with seam.served_together(BACKEND, [BASE_V, SPEC_V], REPOS, "run") as up:
        assert [s.variant.name for s in up] == [BASE, SPECULATIVE] and all(s.pace for s in up)
    # side by side, not one after the other: both began before either was up (an order, not a time: the time
    # flaked under load)
    starts = sorted(calls.log[:2])
    assert starts == [("start", BASE, "repo-b"), ("start", SPECULATIVE, "repo-s")]
    assert calls.log[4:] == [("smoke", BASE), ("smoke", SPECULATIVE), ("stop", SPECULATIVE, 7.0), ("stop", BASE, 7.0)]


def test_a_start_that_fails_stops_the_server_that_came_up_and_its_error_goes_on(calls, monkeypatch):
    _slow_starts(monkeypatch, calls, fail=SPECULATIVE)
    with pytest.raises(RuntimeError, match="speculative never got ready"), \
            seam.served_together(BACKEND, [BASE_V, SPEC_V], REPOS, "run"):
        raise AssertionError("never reached")
    assert [e for e in calls.log if e[0] in ("stop", "smoke")] == [("stop", BASE, 7.0)]


def test_when_every_start_fails_the_groups_first_variant_is_named_whichever_failed_first(calls, monkeypatch,
                                                                                         tmp_path):
    def start(backend, v, repo, run):
        time.sleep(0.3 if v.name == SPECULATIVE else 0.0)  # the base fails first
        with run.timed("serve", v.name):
            raise RuntimeError(f"{v.name} never got ready")
    monkeypatch.setattr(seam, "start_server", start)
    monkeypatch.setenv("SPECOPS_ARTIFACTS", str(tmp_path))
    run = RunDir.create("ngram-local", "both-fail")
    with pytest.raises(RuntimeError, match="speculative never got ready"), \
            seam.served_together(BACKEND, [SPEC_V, BASE_V], REPOS, run):
        raise AssertionError("never reached")
    assert run.progress.failed_at == ("serve", SPECULATIVE)
    status = run.status()
    assert (status["state"], status["step"], status["variant"]) == ("failed", "serve", SPECULATIVE)
    assert status["error"] == "RuntimeError: speculative never got ready"


def test_a_failing_smoke_of_the_first_stops_both(calls, monkeypatch):
    _slow_starts(monkeypatch, calls)
    monkeypatch.setattr(seam, "send_smoke_request", lambda *a: (_ for _ in ()).throw(RuntimeError("no answer")))
    with pytest.raises(RuntimeError, match="no answer"), \
            seam.served_together(BACKEND, [BASE_V, SPEC_V], REPOS, "run"):
        raise AssertionError("never reached")
    assert sorted(e for e in calls.log if e[0] == "stop") == [("stop", BASE, 7.0), ("stop", SPECULATIVE, 7.0)]


def _counters(drafted: float) -> Acceptance:
    return Acceptance("metrics", drafted, drafted * 2, drafted)


def test_a_group_is_measured_round_robin_and_each_window_spans_its_rounds(calls):
    calls.counters.update({BASE: [None, None], SPECULATIVE: [_counters(5), _counters(12)]})
    with seam.served(BACKEND, BASE_V, "repo", "run") as a, seam.served(BACKEND, SPEC_V, "repo", "run") as b:
        measured = seam.measure_group([a, b], "tool", "tokenizer", BENCH, WORKLOAD, RUN)
    assert (measured.design, measured.why_not_requests) == (Design.ROUNDS, "the fake tool drives one server per run")
    records = measured.records
    assert [entry for entry in calls.log if entry[0] == "round"] == [
        ("round", BASE, 0, 0.1), ("round", SPECULATIVE, 0, 0.1), ("round", BASE, 1, 0.1),
        ("round", SPECULATIVE, 1, 0.1)]
    (base_name, base_rounds, base_acceptance), (spec_name, spec_rounds, spec_acceptance) = records
    assert (base_name, base_rounds, base_acceptance) == (BASE, ["base-0", "base-1"], None)  # a backend without counters
    assert (spec_name, spec_rounds) == (SPECULATIVE, ["speculative-0", "speculative-1"])
    assert (spec_acceptance.num_drafts, spec_acceptance.num_draft_tokens, spec_acceptance.num_accepted_tokens) == (
        7, 14, 7)  # the counters over the rounds, not over smoke and check


def test_interleaved_requests_take_one_run_per_round_in_an_order_that_flips_each_round(calls):
    calls.design.chosen = (Design.REQUESTS, None)
    calls.counters.update({BASE: [None, None], SPECULATIVE: [_counters(5), _counters(12)]})
    with seam.served(BACKEND, BASE_V, "repo", "run") as a, seam.served(BACKEND, SPEC_V, "repo", "run") as b:
        measured = seam.measure_group([a, b], "tool", "tokenizer", BENCH, WORKLOAD, RUN)
    assert measured.design is Design.REQUESTS
    assert [entry for entry in calls.log if entry[0] in ("round", "interleaved")] == [
        ("interleaved", [BASE, SPECULATIVE], 0, 2), ("interleaved", [SPECULATIVE, BASE], 1, 2)]
    (base_name, base_rounds, _), (spec_name, spec_rounds, spec_acceptance) = measured.records
    # each variant gets its own measurements back, whichever went first
    assert (base_rounds, spec_rounds) == (["base-0", "base-1"], ["speculative-0", "speculative-1"])
    assert spec_acceptance.num_drafts == 7


def test_min_rounds_adds_rounds_only_where_the_variants_take_turns(calls):
    bench = Benchmark(rounds=1)
    calls.counters.update({BASE: [None] * 4, SPECULATIVE: [None] * 4})
    with seam.served(BACKEND, BASE_V, "repo", "run") as a, seam.served(BACKEND, SPEC_V, "repo", "run") as b:
        measured = seam.measure_group([a, b], "tool", "tokenizer", bench, WORKLOAD, RUN, min_rounds=3)
        assert measured.rounds == 3 and bench.rounds == 1  # the profile's benchmark is left as it was
        assert [e[1:3] for e in calls.log if e[0] == "round"] == [(v, r) for r in range(3) for v in (BASE, SPECULATIVE)]
        calls.design.chosen = (Design.REQUESTS, None)  # paired requests: each round already gives the interval
        assert seam.measure_group([a, b], "tool", "tokenizer", bench, WORKLOAD, RUN, min_rounds=3).rounds == 1


def test_an_interrupt_while_servers_start_returns_at_once_and_each_is_stopped_when_its_start_returns(calls,
                                                                                                  monkeypatch):
    _slow_starts(monkeypatch, calls)

    def interrupted(futures):
        raise KeyboardInterrupt
    monkeypatch.setattr(seam, "wait", interrupted)
    began = time.monotonic()
    with pytest.raises(KeyboardInterrupt), seam.served_together(BACKEND, [BASE_V, SPEC_V], REPOS, "run"):
        raise AssertionError("never reached")
    assert time.monotonic() - began < 0.2  # not held until the servers are up
    deadline = time.monotonic() + 5
    while len([e for e in calls.log if e[0] == "stop"]) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sorted(e for e in calls.log if e[0] == "stop") == [("stop", BASE, 7.0), ("stop", SPECULATIVE, 7.0)]
    assert not [e for e in calls.log if e[0] == "smoke"]


def test_a_variant_is_checked_by_its_benchmark_answers_and_separately_only_where_they_are_missing(calls):
    from specops.bench.sampling import Workload
    from specops.bench.target import RequestKind

    w = Workload(source="s", label="s", prompts=["p0", "p1"], categories=[None, None], warmup=0, requests=2,
                 check=["c"], conversations=False, request=RequestKind(False, "plain text"))
    profile = SimpleNamespace(comparison=SimpleNamespace(baseline=True, lossless_max_tokens=8),
                              benchmark=SimpleNamespace(output_tokens=16))
    with seam.served(BACKEND, BASE_V, "repo", "run") as up:
        kept = up.checked(profile, w, {0: "a0", 1: "a1"}, "unused")
        assert (kept.outputs, kept.source) == (["a0", "a1"], "the benchmark's own answers: 2 measured prompts x 16 "
                                                             "tokens")
        assert not [e for e in calls.log if e[0] == "check"]  # no request of the check's own
        missing = up.checked(profile, w, {0: "a0"}, "the tool kept no text for some measured prompt")
    assert calls.log[-2][:3] == ("check", BASE, ["c"])  # the separate check, while the server is up
    assert missing.outputs == ["base says"] and missing.source.endswith("(the tool kept no text for some measured "
                                                                        "prompt)")
