"""The `specdec` flow: one profile, speculative vs base, served, checked, benchmarked, reported.

Only sequencing and teardown live here; every step is a task in tasks/. A run that fails at
any step still writes its report (FAILED, the step, the error, the logs), appends its
RunResult, and stops every server it started. A failed or INVALID run ends in a Failed state
whose message gives the reasons; a Completed run is a valid (or, without a baseline, unchecked) one.
"""
from __future__ import annotations

import time
from functools import partial
from pathlib import Path

from prefect import flow, get_run_logger
from prefect.states import Failed, State

from flows.train_draft import prepare_trained_draft
from prefect_adapters.reaping import reap_servers
from prefect_adapters.slot_limits import hold_slots
from specops.backends.base import Backend, Server
from specops.bench.tool import BenchTool
from specops.pipeline.backend import backend_for, tool_for
from specops.pipeline.benchmark import Measured, bench_prompts, variant_record
from specops.pipeline.check import Pace, check_prompts
from specops.pipeline.summarize import RunFacts
from specops.profile.loader import LoadedProfile
from specops.results.model import RunResult, Status, Window
from specops.rundir import RunDir, cache_root
from specops.slots import slot_names
from specops.sources.base import ModelArtifact
from specops.sources.integrity import Stored
from specops.teardown import teardown_quietly
from specops.variant import BASE, SPECULATIVE, Variant, variants_of
from tasks.benchmark import benchmark_round, read_acceptance
from tasks.check import compare_check_outputs, generate_check_outputs, send_smoke_request
from tasks.models import check_draft_vocabulary, download_model
from tasks.profile import check_prerequisites, create_run_dir, validate_profile
from tasks.render import build_engine, render_repository
from tasks.report import publish_artifacts, record_result, summarize_run, write_report
from tasks.serve import start_server, stop_server


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


def _value(result: ModelArtifact | Stored, facts: RunFacts, step: str):
    """A cache step's result (an artifact, or a Stored path), noting whether the cache held it."""
    facts.cached_steps[step] = result.cached
    return result.value if isinstance(result, Stored) else result


def prepare_models(loaded: LoadedProfile, backend: Backend, run: RunDir, cache_dir: Path,
                   facts: RunFacts) -> tuple[ModelArtifact, ModelArtifact | None]:
    p = loaded.profile
    files = backend.registration.hub_files  # of a hub repository, only what this backend's loaders read
    target = _value(download_model(p.target.source, cache_dir, run, "target", files), facts, "download target")
    facts.models["target"] = target
    draft = None
    if p.draft is not None and p.draft.train is not None:
        draft, _ = prepare_trained_draft(loaded, backend, target, run, cache_dir)
        facts.cached_steps["train draft"] = draft.cached
    elif p.draft is not None:
        draft = _value(download_model(p.draft.source, cache_dir, run, "draft", files), facts, "download draft")
        with run.timed("download", "draft"):  # so a mismatch is reported at this step, not at "flow"
            check_draft_vocabulary(target, draft)
    if draft is not None:
        facts.models["draft"] = draft
    return target, draft


def serve_and_check(backend: Backend, variant: Variant, repo: Path, loaded: LoadedProfile, run: RunDir,
                    servers: dict[str, Server], facts: RunFacts) -> tuple[list[str], Pace]:
    """Start the variant's server (kept in `servers` for teardown), smoke it, get its check outputs
    and the pace it answered them at (the benchmark's time budget is derived from it)."""
    p = loaded.profile
    server = servers[variant.name] = start_server(backend, variant, repo, run)
    tool_name, version = server.version()
    facts.servers[tool_name] = version
    pace = send_smoke_request(backend, server, variant, run)
    if not p.comparison.baseline:
        return [], pace
    outputs, checked = generate_check_outputs(backend, server, variant, check_prompts(p.benchmark, p.comparison),
                                              p.comparison.lossless_max_tokens, run)
    return outputs, pace + checked


def serve_and_benchmark(loaded: LoadedProfile, backend: Backend, tool: BenchTool, run: RunDir, facts: RunFacts,
                        variants: list[Variant], repos: dict[str, Path], prompts: list[str], tokenizer: Path,
                        outputs: dict[str, list[str]]) -> None:
    """Each group of variants served, checked (outputs kept for the lossless comparison), benchmarked
    and stopped; on any error every server still up is stopped before the error goes on."""
    p = loaded.profile
    # Interleaved: both servers up, rounds alternate A B A B. Otherwise one variant at a time.
    groups = [variants] if p.benchmark.interleave else [[v] for v in variants]
    servers: dict[str, Server] = {}
    paces: dict[str, Pace] = {}
    try:
        for group in groups:
            before = {}
            for v in group:
                outputs[v.name], paces[v.name] = serve_and_check(backend, v, repos[v.name], loaded, run, servers,
                                                                 facts)
                before[v.name] = read_acceptance(backend, servers[v.name], v, settle=True)
            rounds: dict[str, list[Measured]] = {v.name: [] for v in group}
            for r in range(p.benchmark.rounds):
                for v in group:
                    rounds[v.name].append(benchmark_round(tool, backend, servers[v.name], v, tokenizer, p.benchmark,
                                                          prompts, run, r, paces[v.name]))
            for v in group:
                after = read_acceptance(backend, servers[v.name], v, settle=True)
                acceptance = after.since(before[v.name]) if after is not None else None
                facts.variants.append(variant_record(v, rounds[v.name], acceptance))
                stop_server(servers.pop(v.name), p.serving.stop_timeout_s, run, v)
    except BaseException:
        # Every server still up is stopped; one that will not stop is logged, not raised over
        # the error that got us here. (On success each group has stopped its own servers.)
        for name, server in list(servers.items()):
            variant = next(v for v in variants if v.name == name)
            teardown_quietly(partial(stop_server, server, p.serving.stop_timeout_s, run, variant),
                             f"stopping the {name} server")
        raise


def measure(loaded: LoadedProfile, backend: Backend, tool: BenchTool, run: RunDir, facts: RunFacts) -> None:
    p = loaded.profile
    cache_dir = cache_root()
    target, draft = prepare_models(loaded, backend, run, cache_dir, facts)
    variants = variants_of(p.method, p.comparison.baseline)
    prompts, tokenizer = bench_prompts(p.benchmark), backend.tokenizer_dir(target)
    outputs: dict[str, list[str]] = {}
    # Build -> serve -> check -> benchmark -> teardown holds the host's accelerator slots: one benchmark
    # per GPU, and an engine build (trtllm-build runs on the GPU) never beside another run's benchmark.
    with hold_slots(slot_names(p.serving.exclusive, backend.gpus())) as held:
        try:
            repos = {}
            for v in variants:
                engines = _value(build_engine(backend, v, target, draft, cache_dir, run), facts, f"build {v.name}")
                repos[v.name] = _value(render_repository(backend, v, target, draft, cache_dir, engines, run), facts,
                                       f"render {v.name}")
            serve_and_benchmark(loaded, backend, tool, run, facts, variants, repos, prompts, tokenizer, outputs)
        finally:
            facts.window = Window(started_at=held.started_at, finished_at=time.time(), slots=held.names,
                                  waited_s=round(held.waited_s, 3))
    if p.comparison.baseline and p.comparison.lossless_prompts:
        facts.lossless = compare_check_outputs(outputs[BASE], outputs[SPECULATIVE], run)


def finish(result: RunResult, run: RunDir) -> Path:
    """Report files, Prefect artifacts and the database row, from the one RunResult."""
    files = write_report(result, run)
    publish_artifacts(result, files)
    record_result(result)
    return files.report_md


def set_final_status(run: RunDir, result: RunResult) -> None:
    f = result.failure
    run.set_status(result.status.value, f.step if f else None, f.variant if f else None, f.error if f else None)


@flow(name="specdec", on_cancellation=[reap_servers], on_crashed=[reap_servers], log_prints=True)
def specdec(profile: str = "ngram-local", overrides: list[str] | None = None,
            run_id: str | None = None) -> RunResult | State:
    """Deploy and benchmark one speculative-decoding profile against its base model. Ends Completed
    with the RunResult, or Failed: RunFailed raised (a step failed), RunInvalid (outputs differ)."""
    loaded = validate_profile(profile, list(overrides or []))
    run = create_run_dir(loaded, run_id)
    backend, tool = backend_for(loaded.profile), tool_for(loaded.profile)  # built once, handed to every step
    facts = RunFacts()
    try:
        check_prerequisites(backend, tool, run)
        measure(loaded, backend, tool, run, facts)
    except BaseException as error:
        report = None
        try:
            result = summarize_run(loaded, run, backend, tool, facts, error)
            set_final_status(run, result)  # first: a report that fails must not leave "running"
            report = finish(result, run)
        except Exception as unreported:  # the original error matters more than a failed report
            step, variant = run.progress.failed_at or ("report", None)
            run.set_status("failed", step, variant, f"{type(error).__name__}: {error}")
            get_run_logger().error("could not report the failed run: %r", unreported)
            raise error from None
        if isinstance(error, Exception):
            raise RunFailed(result, report) from error
        raise  # cancellation and interrupts stay what they are
    result = summarize_run(loaded, run, backend, tool, facts)
    try:
        report = finish(result, run)
    except BaseException as error:
        run.set_status("failed", "report", None, f"{type(error).__name__}: {error}")
        raise
    set_final_status(run, result)
    return final_state(result, report)


def run_specdec(profile: str, overrides: list[str] | None = None, run_id: str | None = None) -> RunResult:
    """specdec() for callers that want the measurement either way: an INVALID run's RunResult is
    returned (its Prefect state is Failed all the same); a failed run raises RunFailed."""
    try:
        return specdec(profile, overrides, run_id)
    except RunInvalid as invalid:
        return invalid.result
