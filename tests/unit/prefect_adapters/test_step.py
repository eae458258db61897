"""@step(timed=...): a real Prefect task run (a test harness server) times itself into its run directory, under its
phase and label, and an error it raises marks the run failed there; a retry is timed again, and one that works
takes the failure back."""
from __future__ import annotations

import json
import time
from types import SimpleNamespace

from prefect import flow

from prefect_adapters.step import step
from specops.run.rundir import RUNNING, RunDir
from specops.run.variant import BASE, SPECULATIVE, Variant, base_method


def variant(name: str) -> Variant:
    return Variant(name, base_method())


@step(timed="check")
def send(variant: Variant, run: RunDir) -> str:
    """Sends a toy request."""
    time.sleep(0.05)
    return variant.name


@step(timed="serve", announce=False)
def stop(variant: Variant, run: RunDir) -> None:
    pass


@step(timed="preflight", label="{backend.config.kind}")
def preflight(backend, run: RunDir) -> None:
    pass


@step(timed="benchmark", label="interleaved")
def interleaved(run: RunDir) -> None:
    pass


def opened(tmp_path) -> RunDir:
    run = RunDir(tmp_path)
    run.mark_started()
    return run


def test_a_timed_step_adds_its_wall_time_under_its_phase_and_label(harness, tmp_path):
    run = opened(tmp_path)

    @flow
    def toy() -> str:
        preflight(SimpleNamespace(config=SimpleNamespace(kind="vllm")), run)
        interleaved(run)
        sent = send(variant(BASE), run)
        stop(variant(BASE), run)  # teardown: not the step status.json names
        return sent

    assert toy() == BASE
    assert (send.name, send.description) == ("send", "Sends a toy request.")  # Prefect reads the step itself
    phases = json.loads((tmp_path / "timings.json").read_text())["phases"]
    assert phases.keys() == {"preflight", "benchmark", "check", "serve"} and phases == run.progress.phases
    assert (list(phases["preflight"]), list(phases["benchmark"]), list(phases["serve"])) == (
        ["vllm"], ["interleaved"], [BASE])
    assert phases["check"][BASE] >= 0.05
    assert run.progress.failed_at is None and (run.status()["state"], run.status()["step"]) == (RUNNING, "check")


def test_a_raising_step_marks_the_run_failed_at_its_phase_and_label(harness, tmp_path):
    run = opened(tmp_path)

    @step(timed="serve")
    def start(variant: Variant, run: RunDir) -> None:
        raise RuntimeError("server died")

    @flow
    def toy() -> None:
        start(variant(SPECULATIVE), run)

    assert toy(return_state=True).is_failed()
    assert run.progress.failed_at == ("serve", SPECULATIVE) and SPECULATIVE in run.progress.phases["serve"]
    status = run.status()
    assert (status["state"], status["step"], status["variant"]) == ("failed", "serve", SPECULATIVE)
    assert status["error"] == "RuntimeError: server died"


def test_each_retry_is_timed_and_one_that_works_takes_the_failure_back(harness, tmp_path):
    run = opened(tmp_path)
    calls = []

    @step(timed="download", label="{role}", retries=1, retry_delay_seconds=0)
    def download(run: RunDir, role: str = "target") -> str:
        calls.append(role)
        if len(calls) == 1:
            raise OSError("connection reset")
        return role

    @flow
    def toy() -> list[str]:
        return [download(run), download(run, role="draft")]

    assert toy() == ["target", "draft"] and calls == ["target", "target", "draft"]
    assert run.progress.failed_at is None and len(run.progress.spans["download"]) == 3
    assert run.progress.phases["download"].keys() == {"target", "draft"}
    assert (run.status()["state"], run.status()["step"], run.status()["variant"]) == (RUNNING, "download", "draft")
