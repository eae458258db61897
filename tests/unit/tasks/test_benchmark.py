"""tasks/benchmark.predict_acceptance: the replay's prediction is a reading beside the run, never a step it needs:
a backend whose drafter the replay does not run gets none, and a replay that fails is logged, not fatal."""
from __future__ import annotations

from types import SimpleNamespace

from prefect.logging import disable_run_logger

import tasks.benchmark as bench
from specops.profile.loader import load_profile
from specops.replay.run import ReplayError
from specops.run.rundir import RunDir


def test_a_backend_the_replay_does_not_run_gets_no_prediction_and_no_replay(monkeypatch, tmp_path):
    monkeypatch.setattr(bench, "predicted_for_run", lambda *a, **k: (_ for _ in ()).throw(AssertionError("ran")))
    here = SimpleNamespace(replays_here=lambda: False)
    with disable_run_logger():
        assert bench.predict_acceptance.fn(load_profile("ngram-local"), here, RunDir(tmp_path), None) is None


def test_a_replay_that_fails_costs_only_the_prediction(monkeypatch, tmp_path):
    def fails(loaded, workload, say):
        raise ReplayError("the replay's generate step in .venv-vllm exited 1")

    monkeypatch.setattr(bench, "predicted_for_run", fails)
    run = RunDir(tmp_path)
    with disable_run_logger():
        got = bench.predict_acceptance.fn(load_profile("ngram-vllm-serve-cpu"), SimpleNamespace(replays_here=lambda: True), run,
                                          None)
    assert got is None and run.progress.failed_at is None  # the run goes on: nothing failed


def test_a_progress_bar_is_dropped_after_its_last_round(monkeypatch):
    """A flow running others in its own process (calibrate's 30 runs) keeps no bar of a finished benchmark."""
    made = []

    class Bar:
        def __init__(self, description):
            made.append(description)
            self.report = lambda fraction, note="": None

    monkeypatch.setattr(bench, "ProgressArtifact", Bar)
    tool = SimpleNamespace(line_progress=lambda progress, note: lambda line: None)
    for round_ in range(3):
        share, _ = bench._round_progress(tool, "speculative", round_, 3, "aiperf")
        share(1.0, "done")
        assert len(bench._PROGRESS) == 1
        bench._round_done("speculative", round_, 3)
    assert bench._PROGRESS == {} and made == ["benchmark of speculative"]  # one bar for the three rounds
