"""One way to serve a variant: started, smoked, checked, measured, and always stopped.

Every server the pipeline starts (a specdec variant, a sweep's base or draft length, the draft step's
synthesis server) goes through `served`, so each is registered with the janitor and recorded in the run's
servers/*.json (start_server), timed under the same steps, and stopped by the same rule: on an error quietly,
never hiding that error; on success a stop that fails fails the run. tests/unit/flows/test_one_serving_seam.py
keeps it the only way.
"""
from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, wait
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TypeVar

from prefect.exceptions import TerminationSignal

from specops.backends.base import Backend, Server
from specops.bench.sampling import Workload
from specops.bench.tool import BenchJob, BenchTool
from specops.host.processes import teardown_quietly
from specops.pipeline.benchmark import Measured, bench_job, choose_design, variant_record
from specops.pipeline.check import Checked, Pace, benchmark_answers, separate_check
from specops.pipeline.summarize import RunFacts
from specops.profile.schema import Benchmark, Profile
from specops.results.model import VariantRecord
from specops.results.paired import Design
from specops.run.rundir import RunDir
from specops.run.variant import Variant
from tasks.benchmark import benchmark_interleaved_round, benchmark_round, read_acceptance, record_answers
from tasks.check import generate_check_outputs, send_smoke_request
from tasks.serve import start_server, stop_server

T = TypeVar("T")


@dataclass
class Served:
    """A variant's server, up for the block of `served`."""

    backend: Backend
    variant: Variant
    server: Server
    run: RunDir
    pace: Pace | None = None  # what its smoke and checks took: the benchmark's time bound is derived from it

    def check(self, profile: Profile, workload: Workload) -> list[str]:
        """Its greedy outputs for the lossless comparison (saved in the run), each request sent as the benchmark
        sends its own; none without a baseline to compare."""
        if not profile.comparison.baseline:
            return []
        outputs, pace = generate_check_outputs(self.backend, self.server, self.variant, workload.check,
                                               profile.comparison.lossless_max_tokens, self.run, workload.chat)
        self.pace = pace if self.pace is None else self.pace + pace
        return outputs

    def checked(self, profile: Profile, workload: Workload, answers: dict[int, str] | None, why: str) -> Checked:
        """What the lossless check compares of this variant: its benchmark answers to every measured prompt where
        the tool kept them (`answers`), else a separate check now (its server is up), saying `why`."""
        found = benchmark_answers(answers, workload, profile.benchmark.output_tokens) if answers is not None else None
        return found or separate_check(self.check(profile, workload), profile.comparison.lossless_max_tokens, why)


# A run ended by SIGTERM (`make down` stopping the worker's flow runs, a cancellation) measures nothing more:
# its servers get SIGKILL after this rather than their graceful stop (tritonserver's waits out its whole exit
# timeout while a request is in flight: 5.7 s here), so the flow run, and the worker waiting for it, end
# within `make down`'s bound (STOP_TIMEOUT, 30 s) instead of being killed at it.
ABORTED_STOP_S = 0.5


@contextmanager
def served(backend: Backend, variant: Variant, repo: Path, run: RunDir, facts: RunFacts | None = None,
           smoke: bool = True, started: Server | None = None) -> Iterator[Served]:
    """The variant's server, started from `repo` (its version kept in `facts`) and smoked, for the block.
    `started`: a server already started for it (served_together), which the block then owns."""
    server = started if started is not None else start_server(backend, variant, repo, run)
    stop = partial(stop_server, server, backend.serving.stop_timeout_s, run, variant)
    try:
        up = Served(backend, variant, server, run)
        if facts is not None:
            tool_name, version = server.version()
            facts.servers[tool_name] = version
        if smoke:
            up.pace = send_smoke_request(backend, server, variant, run)
        yield up
    except BaseException as error:  # a server that will not stop must not hide why we stop it
        if isinstance(error, TerminationSignal):  # the run is being ended: no graceful unload (see ABORTED_STOP_S)
            stop = partial(stop_server, server, ABORTED_STOP_S, run, variant)
        teardown_quietly(stop, f"stopping the {variant.name} server")
        raise
    stop()


@contextmanager
def served_together(backend: Backend, variants: list[Variant], repos: dict[str, Path], run: RunDir,
                    facts: RunFacts | None = None) -> Iterator[list[Served]]:
    """The variants' servers started side by side (a start is mostly waiting: weights loading, the engine
    warming up; two vLLM CPU servers start in about the time of one), then each `served` in order for the block.
    A start that fails stops the ones that came up, quietly, and its error goes on."""
    servers = _start_side_by_side(backend, variants, repos, run)
    with ExitStack() as stack:  # leaving it stops the servers, the last started first
        up = []
        for i, (v, server) in enumerate(zip(variants, servers)):
            try:
                up.append(stack.enter_context(served(backend, v, repos[v.name], run, facts, started=server)))
            except BaseException:  # its own server is stopped by `served`; the later ones are not owned yet
                for later, later_server in zip(variants[i + 1:], servers[i + 1:]):
                    teardown_quietly(partial(stop_server, later_server, backend.serving.stop_timeout_s, run, later),
                                     f"stopping the {later.name} server")
                raise
        yield up


def _side_by_side(calls: list[Callable[[], T]], name: str) -> list[Future[T]]:
    """Each call in a thread of its own, in a copy of this thread's context (its Prefect task runs belong to this
    flow run). Daemon threads: an interrupt ends the run without waiting for a server that is still starting;
    what the threads start dies with this process (specops/host/processes.py spawn_guarded)."""
    futures: list[Future[T]] = []
    for i, call in enumerate(calls):
        future: Future[T] = Future()

        def run(future: Future[T] = future, call: Callable[[], T] = call,
                context: contextvars.Context = contextvars.copy_context()) -> None:
            try:
                future.set_result(context.run(call))
            except BaseException as error:  # handed to the waiting thread, which decides
                future.set_exception(error)
        threading.Thread(target=run, name=f"{name}-{i}", daemon=True).start()
        futures.append(future)
    return futures


def _start_side_by_side(backend: Backend, variants: list[Variant], repos: dict[str, Path],
                        run: RunDir) -> list[Server]:
    def stop(v: Variant, server: Server) -> None:
        teardown_quietly(partial(stop_server, server, backend.serving.stop_timeout_s, run, v),
                         f"stopping the {v.name} server")

    futures = _side_by_side([partial(start_server, backend, v, repos[v.name], run) for v in variants],
                            "start-server")
    try:
        wait(futures)
    except BaseException as error:  # interrupted while they start: each is stopped as soon as its start returns
        if hasattr(run, "fail_at"):  # the run ends here, whatever the threads' starts raise later
            run.fail_at("serve", next((v.name for v, f in zip(variants, futures) if not f.done()), "servers"), error)
        for v, f in zip(variants, futures):
            context = contextvars.copy_context()
            f.add_done_callback(lambda f, v=v, c=context: f.exception() is None and c.run(stop, v, f.result()))
        raise
    failed = {v.name: f.exception() for v, f in zip(variants, futures) if f.exception() is not None}
    if failed:
        for v, f in zip(variants, futures):
            if f.exception() is None:
                stop(v, f.result())
        # The group's first variant that failed, whichever thread failed first: when both fail alike (the profile
        # is at fault), every run names the same server, and its status and its error say the same.
        name, error = next(iter(failed.items()))
        if hasattr(run, "fail_at"):
            run.fail_at("serve", name, error)
        raise error
    return [f.result() for f in futures]


@dataclass(frozen=True)
class GroupMeasure:
    """A group's records, and the design that paired them (with why it is not interleaved requests)."""

    records: list[VariantRecord]
    design: Design
    why_not_requests: str | None = None
    rounds: int = 1
    answers: dict[str, dict[int, str]] = field(default_factory=dict)  # variant -> its first round's answers


def measure_group(group: list[Served], tool: BenchTool, tokenizer: Path, bench: Benchmark, workload: Workload,
                  run: RunDir, min_rounds: int = 1) -> GroupMeasure:
    """Each served variant's benchmark rounds, and its acceptance over its rounds only (not smoke or check).

    With several variants up, each round is one tool run whose requests alternate between them when the tool can
    (benchmark.pairing; the order flips every round), else the variants take turns round by round (A B A B): either
    way a slow spell of the host falls on all of them. `min_rounds`: at least that many rounds where they take
    turns (each round is then one unit of the interval)."""
    before = [read_acceptance(s.backend, s.server, s.variant, settle=True) for s in group]
    rounds: list[list[Measured]] = [[] for _ in group]

    def job(s: Served, r: int) -> BenchJob:
        return bench_job(tool, s.backend, s.server, s.variant, tokenizer, bench, workload, run.path, r, s.pace)

    design, why_not = choose_design(tool, [job(s, 0) for s in group], bench.pairing)
    if design is not Design.REQUESTS and bench.rounds < min_rounds:
        bench = bench.model_copy(update={"rounds": min_rounds})
    for r in range(bench.rounds):
        if design is Design.REQUESTS:
            order = list(range(len(group)))[::-1 if r % 2 else 1]
            measured = benchmark_interleaved_round(tool, [group[i].server for i in order],
                                                   [job(group[i], r) for i in order], run, r, bench.rounds)
            for i, m in zip(order, measured):
                rounds[i].append(m)
            continue
        for s, variant_rounds in zip(group, rounds):
            variant_rounds.append(benchmark_round(tool, s.backend, s.server, s.variant, tokenizer, bench, workload,
                                                  run, r, s.pace))
    records = []
    for s, measured, earlier in zip(group, rounds, before):
        record_answers(workload, measured, s.variant, run)
        after = read_acceptance(s.backend, s.server, s.variant, settle=True)
        # None: the backend has no counters to read
        records.append(variant_record(s.variant, measured, after.since(earlier) if after is not None else None))
    return GroupMeasure(records, design, why_not, bench.rounds,
                        {s.variant.name: m[0].run.answers for s, m in zip(group, rounds) if m and m[0].run.answers})
