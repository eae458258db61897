"""The `specdec` flow: one profile, speculative vs base, served, checked, benchmarked, reported.

Only sequencing and teardown live here; every step is a task in tasks/. A run that fails at
any step still writes its report (FAILED, the step, the error, the logs), appends its
RunResult, and stops every server it started. A failed or INVALID run ends in a Failed state
whose message gives the reasons; a Completed run is a valid (or, without a baseline, unchecked) one.
"""
from __future__ import annotations

import time
from pathlib import Path

from prefect import flow, get_run_logger
from prefect.states import Failed, State

from flows.finish import finish, set_final_status
from flows.prepare import prepare_models, variant_repository
from flows.serving import measure_group, served_together
from prefect_adapters.parameters import Overrides, ProfileName, RunId
from prefect_adapters.reaping import reap_servers
from prefect_adapters.refusal import loaded_or_refused, refused_run_id
from prefect_adapters.run_role import given_role, in_role
from prefect_adapters.slot_limits import hold_slots
from specops.backends.base import Backend
from specops.bench.sampling import Workload
from specops.bench.tool import BenchTool
from specops.cost.slots import run_slots
from specops.pipeline.backend import backend_for, tool_for
from specops.pipeline.check import Checked
from specops.pipeline.summarize import RunFacts
from specops.profile.loader import LoadedProfile
from specops.results.model import RunResult, Status, Window
from specops.results.role import RunRole
from specops.run.rundir import RunDir
from specops.run.variant import BASE, SPECULATIVE, Variant, variants_of
from specops.settings import cache_root
from tasks.benchmark import keep_step_cost, predict_acceptance
from tasks.check import compare_check_outputs
from tasks.models import download_workload
from tasks.profile import check_prerequisites, check_result_storage, create_run_dir
from tasks.report import summarize_run


class RunFailed(RuntimeError):
    """The run failed at a step; its report and RunResult say where and why."""

    def __init__(self, result: RunResult, report: Path | None):
        self.result, self.report = result, report
        f = result.failure
        where = f"{f.step} ({f.variant})" if f and f.variant else (f.step if f else "?")
        error = f.error if f else ""
        super().__init__(f"{result.profile} FAILED at {where}: {error}; report: {report or 'not written'}")

    def __reduce__(self):  # a persisted result (pickle) is rebuilt from the record, not from the message
        return type(self), (self.result, self.report)


class RunInvalid(RuntimeError):
    """The run measured, but the speculative outputs differ from the base's; reported and recorded."""

    def __init__(self, result: RunResult, report: Path | None):
        self.result, self.report = result, report
        super().__init__(f"{result.profile} INVALID: {'; '.join(result.reasons)}; report: {report}")

    def __reduce__(self):
        return type(self), (self.result, self.report)


def final_state(result: RunResult, report: Path) -> RunResult | State:
    """What the flow returns: its RunResult (Completed) when the run is valid or unchecked; a Failed
    state whose message gives the reasons when it is INVALID, so automations and the UI see it.
    Its data is a RunInvalid carrying the RunResult: a caller of specdec() gets it raised, as
    RunFailed for a failed run."""
    if result.status is Status.INVALID:
        invalid = RunInvalid(result, report)
        return Failed(message=str(invalid), data=invalid)
    return result


def serve_and_benchmark(loaded: LoadedProfile, backend: Backend, tool: BenchTool, run: RunDir, facts: RunFacts,
                        variants: list[Variant], repos: dict[str, Path], workload: Workload, tokenizer: Path,
                        checked: dict[str, Checked]) -> None:
    """Each group of variants served, benchmarked, checked (the benchmark's own answers where the tool keeps them,
    else prompts of the check's own, kept for the lossless comparison) and stopped; on any error every server
    still up is stopped before the error goes on."""
    p = loaded.profile
    # Interleaved: both servers up, rounds alternate A B A B. Otherwise one variant at a time.
    groups = [variants] if p.benchmark.interleave else [[v] for v in variants]
    compared = p.comparison.baseline and p.comparison.lossless_prompts > 0
    for group in groups:
        with served_together(backend, group, repos, run, facts) as up:
            for s in up if compared and not tool.keeps_answers else ():  # before: it paces the benchmark's bound
                checked[s.variant.name] = s.checked(p, workload, None, f"{tool.name} keeps no answers")
            group_measure = measure_group(up, tool, tokenizer, p.benchmark, workload, run)
            for s in up if compared and tool.keeps_answers else ():  # one at a time: the status names each
                checked[s.variant.name] = s.checked(p, workload, group_measure.answers.get(s.variant.name),
                                                    "the benchmark tool kept no text for some measured prompt")
            facts.variants.extend(group_measure.records)
            facts.design = (group_measure.design, group_measure.why_not_requests if p.benchmark.interleave else
                            "benchmark.interleave is false: one variant's rounds, then the other's")


def measure(loaded: LoadedProfile, backend: Backend, tool: BenchTool, run: RunDir, facts: RunFacts) -> None:
    p = loaded.profile
    models = prepare_models(loaded, backend, run, cache_root(), facts)
    variants = variants_of(p.method, p.comparison.baseline)
    workload = facts.workload = download_workload(p, models.target, models.cache, run)
    tokenizer = backend.tokenizer_dir(models.target)
    checked: dict[str, Checked] = {}
    # Build -> serve -> check -> benchmark -> teardown holds the host's accelerator slots: one benchmark
    # per GPU, and an engine build (trtllm-build runs on the GPU) never beside another run's benchmark.
    with hold_slots(run_slots(p.serving.exclusive, backend.gpus()), f"{p.name} run {run.run_id}", run) as held:
        try:
            repos = {v.name: variant_repository(backend, v, models, run, facts) for v in variants}
            serve_and_benchmark(loaded, backend, tool, run, facts, variants, repos, workload, tokenizer, checked)
            facts.predicted = predict_acceptance(loaded, backend, run, workload)  # on the cores the servers freed
            # after the prediction, which used the earlier runs' cost; its replay gives the requests' steps
            keep_step_cost(loaded, backend, facts.variants, run, facts.predicted)
        finally:
            facts.window = Window(started_at=held.started_at, finished_at=time.time(), slots=held.names,
                                  waited_s=round(held.waited_s, 3))
    if p.comparison.baseline and p.comparison.lossless_prompts:
        facts.lossless = compare_check_outputs(checked[BASE], checked[SPECULATIVE], run)


@flow(name="specdec", on_cancellation=[reap_servers], on_crashed=[reap_servers], log_prints=True)
def specdec(profile: ProfileName = "ngram-local", overrides: Overrides = (), run_id: RunId = "") -> RunResult | State:
    """Deploy and benchmark one speculative-decoding profile against its base model, as a run of its own or in
    the role its parent flow gives it (run_specdec: a member of a comparison, ...). Ends Completed with the
    RunResult, or Failed: RunFailed raised (a step failed), RunInvalid (outputs differ)."""
    role = given_role()
    loaded = loaded_or_refused(profile, overrides)  # the run's one load of its profile, handed to every step
    if isinstance(loaded, State):
        return loaded
    if (refused := refused_run_id(run_id, loaded.profile.name)) is not None:
        return refused
    run = create_run_dir(loaded, run_id, role)
    backend, tool = backend_for(loaded.profile), tool_for(loaded.profile)  # built once, handed to every step
    facts = RunFacts()
    try:
        check_prerequisites(backend, tool, run)
        check_result_storage(run, loaded.profile.name)
        measure(loaded, backend, tool, run, facts)
    except BaseException as error:
        report, result = None, None
        try:
            result = summarize_run(loaded, run, backend, tool, facts, error, role)
            done = finish(result, run)  # its record first; a report that fails keeps the step the run failed at
            set_final_status(run, result)
            report, unreported = done.report, done.error
        except Exception as exc:  # the original error matters more than a failed report
            step, variant = run.progress.failed_at or ("report", None)
            run.say_failed(step, variant, f"{type(error).__name__}: {error}")
            unreported = exc
            if result is None or not isinstance(error, Exception):
                raise error from None
        if unreported is not None:
            get_run_logger().error("could not report the failed run: %r", unreported)
        if isinstance(error, Exception):
            raise RunFailed(result, report) from error
        raise  # cancellation and interrupts stay what they are
    result = summarize_run(loaded, run, backend, tool, facts, role=role)
    done = finish(result, run)  # an interrupt there ends the run failed at report (its step's own record)
    set_final_status(run, done.result)
    if done.error is not None:  # e.g. a full disk: the step and the file, in one line; row and status agree
        raise RunFailed(done.result, None) from done.error
    return final_state(done.result, done.report)


def run_specdec(profile: str, overrides: list[str] | None = None, run_id: str | None = None,
                role: RunRole = RunRole()) -> RunResult:
    """specdec() for callers that want the measurement either way: an INVALID run's RunResult is
    returned (its Prefect state is Failed all the same); a failed run raises RunFailed."""
    try:
        with in_role(role):
            return specdec(profile, list(overrides or []), run_id)
    except RunInvalid as invalid:
        return invalid.result
