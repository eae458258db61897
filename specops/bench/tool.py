"""The seam for benchmark tools: one job in the served API's terms -> one bounded run -> typed figures.

A tool says which APIs it can drive; the pipeline hands it a `BenchJob` (the served model as a
`BenchTarget`, the prompts, the load) and gets back a `BenchRun`: aggregate `BenchMetrics` and
one `RequestSample` per measured request, so variants can be paired prompt by prompt.

A tool that can address several servers in one run may also take an `InterleavedJob`: the variants'
requests alternate one by one, so each prompt's measurements on every variant are taken back to back
and a slow spell of the host falls on all of them (RMIT: Abedi & Brecht, ICPE 2017). It answers with
one `BenchRun` per variant.
"""
from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from specops.bench.target import Api, BenchTarget, pick
from specops.host.liveness import Watch, Watchdog
from specops.registry import Registry
from specops.results.metrics import BenchRun


class BenchToolError(RuntimeError):
    """The tool failed, or its output could not be read; the message names its log."""


@dataclass(frozen=True)
class BenchJob:
    """One run of a tool against one served variant."""

    target: BenchTarget
    api: Api  # which of the target's APIs the tool drives
    tokenizer: Path | str  # local HF tokenizer dir (tools run offline)
    prompts: list[str]  # every request's prompt comes from this list, in order
    requests: int  # measured requests
    warmup: int  # unmeasured requests sent first
    output_tokens: int  # pinned where the target allows it
    concurrency: int
    artifact_dir: Path  # the tool's own files
    log_path: Path
    timeout_s: float
    round: int = 0

    @property
    def address(self) -> str:
        return self.target.endpoints[self.api]


# What the variants of an interleaved run must share: the same requests go to each of them.
SHARED_LOAD = ("api", "prompts", "requests", "warmup", "output_tokens", "concurrency", "round")


@dataclass(frozen=True)
class InterleavedJob:
    """One tool run whose requests alternate between variants, request by request, in `jobs` order: every
    prompt goes to each variant in turn, back to back. Each job gives its variant's target; the load
    (SHARED_LOAD) is the same in all of them, and the run's files are the interleaved job's own."""

    jobs: tuple[BenchJob, ...]
    artifact_dir: Path
    log_path: Path
    timeout_s: float

    def __post_init__(self) -> None:
        if len(self.jobs) < 2:
            raise ValueError("an interleaved run needs at least two variants")
        for name in SHARED_LOAD:
            if len({repr(getattr(job, name)) for job in self.jobs}) > 1:
                raise ValueError(f"the variants of an interleaved run differ in {name}")

    @property
    def load(self) -> BenchJob:
        """The shared load (the first variant's job)."""
        return self.jobs[0]


def interleave_blocker(tool: BenchTool, jobs: Sequence[BenchJob]) -> str | None:
    """Why `tool` cannot interleave these jobs' requests in one run (None: it can)."""
    if len(jobs) < 2:
        return "there is only one variant to measure"
    if jobs[0].concurrency != 1:
        # Two servers busy at once share the host and each sees half the load: a different measurement.
        return (f"requests interleave only at concurrency 1 (this run: {jobs[0].concurrency}); with more in flight "
                "both servers would run at once and share the host")
    return tool.interleave_blocker(jobs)


class BenchTool(ABC):
    """A load generator specops can run; registered in BENCH_TOOLS below."""

    name: ClassVar[str]
    apis: ClassVar[tuple[Api, ...]]  # the APIs it can drive, preferred first
    # Lines of the tool's output that say how far one run has got: (text in the line, fraction done).
    # Neither tool prints per-request progress when it is not on a terminal; these are its phases.
    progress_marks: ClassVar[tuple[tuple[str, float], ...]] = ()
    # The APIs over which it can interleave several servers' requests in one run (InterleavedJob).
    interleaves: ClassVar[frozenset[Api]] = frozenset()
    # Whether its runs keep the text of every answer (BenchRun.answers): the lossless check then compares the
    # benchmark's own temperature-0 answers instead of sending prompts of its own
    keeps_answers: ClassVar[bool] = False

    def progress_of(self, line: str) -> float | None:
        """How far a run is, from one line of the tool's output (None: the line does not say)."""
        return next((fraction for text, fraction in self.progress_marks if text in line), None)

    def line_progress(self, progress: Callable[[float, str], None], note: str) -> Callable[[str], None]:
        """A callback for each line of the tool's output that moves `progress` on by the phases it announces."""
        def on_line(line: str) -> None:
            if (fraction := self.progress_of(line)) is not None:
                progress(fraction, note)

        return on_line

    def pick_api(self, offered: tuple[Api, ...], chat: bool | None = None) -> Api | None:
        """The API to drive on a server that answers `offered` (None: none this tool speaks); `chat`: a chat API
        only (True), or one that sends the text raw (False)."""
        return pick(self.apis, offered, chat)

    @abstractmethod
    def preflight(self) -> list[str]:
        """What this machine lacks to run the tool, each with its fix."""

    @abstractmethod
    def version(self) -> str | None:
        """The tool's version, as installed."""

    @abstractmethod
    def command(self, job: BenchJob) -> list[str]:
        """The command line the job runs (also what `specops plan` shows)."""

    @abstractmethod
    def run(self, job: BenchJob, on_line: Callable[[str], None] | None = None,
            watch: Watchdog | None = None) -> BenchRun:
        """Run the job within job.timeout_s (its processes killed on timeout, error or interrupt,
        or when `watch` finds the server gone) and return its figures and per-request samples."""

    def interleave_blocker(self, jobs: Sequence[BenchJob]) -> str | None:
        """Why this tool cannot send these jobs' requests alternately in one run (None: it can)."""
        return f"{self.name} drives one server per run"

    def interleaved_command(self, job: InterleavedJob) -> list[str]:
        """The command line of an interleaved run (only for tools whose interleave_blocker can say None)."""
        raise NotImplementedError(f"{self.name} cannot interleave requests")

    def run_interleaved(self, job: InterleavedJob, on_line: Callable[[str], None] | None = None,
                        watch: Watch | None = None) -> list[BenchRun]:
        """Run an interleaved job within its time bound; one BenchRun per job.jobs, in that order."""
        raise NotImplementedError(f"{self.name} cannot interleave requests")


def prompt_index(prompts: list[str]) -> Callable[[str], int | None]:
    """Map a request's prompt text back to its index in the job's prompt list."""
    index = {text: i for i, text in reversed(list(enumerate(prompts)))}
    stripped = {text.strip(): i for text, i in index.items()}
    return lambda text: index.get(text, stripped.get(text.strip()))


def payload_prompt(inputs: dict[str, Any]) -> str | None:
    """The prompt text of one sent request: a text_input (KServe tensor or Triton generate field),
    or an OpenAI payload's prompt or messages (genai-perf nests those under "payload")."""
    if "text_input" in inputs:
        value = inputs["text_input"]
        return value[0] if isinstance(value, list) else str(value)
    payload = inputs.get("payload")
    if payload is None:
        return None
    body = json.loads(payload) if isinstance(payload, str) else payload
    if "prompt" in body:
        prompt = body["prompt"]
        return " ".join(prompt) if isinstance(prompt, list) else str(prompt)
    if "messages" in body:
        return " ".join(m.get("content", "") for m in body["messages"])
    return None


# export key -> (unit genai-perf and AIPerf report, our name's stem, streaming only: absent from a
# non-streaming run's export); of each we keep DISTRIBUTION_STATS
DISTRIBUTIONS = {
    "request_latency": ("ms", "request_latency_ms", False),
    "time_to_first_token": ("ms", "time_to_first_token_ms", True),
    "inter_token_latency": ("ms", "inter_token_latency_ms", True),
}
DISTRIBUTION_STATS = ("avg", "p50", "p99")


class ExportError(ValueError):
    """An export that is missing, ambiguous or not in the expected shape."""


def aggregate_metrics(data: dict, path: Path, count_unit: str) -> dict[str, Any]:
    """The BenchMetrics fields from an export's aggregates, the shape genai-perf's and AIPerf's share;
    `count_unit`: the unit the tool gives request_count in."""
    metrics: dict[str, Any] = {
        "output_token_throughput_tok_s": metric_stat(data, path, "output_token_throughput", "tokens/sec", "avg"),
        "request_throughput_req_s": metric_stat(data, path, "request_throughput", "requests/sec", "avg"),
    }
    for key, (unit, stem, streaming_only) in DISTRIBUTIONS.items():
        for stat in DISTRIBUTION_STATS:
            metrics[f"{stem}_{stat}"] = metric_stat(data, path, key, unit, stat, streaming_only)
    metrics["output_sequence_length_avg"] = metric_stat(data, path, "output_sequence_length", "tokens", "avg")
    metrics["input_sequence_length_avg"] = metric_stat(data, path, "input_sequence_length", "tokens", "avg", True)
    metrics["request_count"] = int(metric_stat(data, path, "request_count", count_unit, "avg"))
    return metrics


def metric_stat(
    data: dict, path: Path, key: str, unit: str, stat: str, optional: bool = False
) -> float | None:
    """One statistic of one metric ({"unit": ..., "avg": ..., "p50": ...}, the shape genai-perf's
    and AIPerf's exports share), its unit checked."""
    entry = data.get(key)
    if entry is None:
        if optional:
            return None
        raise ExportError(f"{path}: metric {key!r} missing (have {sorted(data)})")
    if entry.get("unit") != unit:
        raise ExportError(f"{path}: {key} is in {entry.get('unit')!r}, expected {unit!r}")
    value = entry.get(stat)
    if not isinstance(value, (int, float)):
        raise ExportError(f"{path}: {key}.{stat} is {value!r}, expected a number")
    return float(value)



# `benchmark.tool` in a profile names one of these.
BENCH_TOOLS: Registry[type[BenchTool]] = Registry("benchmark tool")
BENCH_TOOLS.register("genai-perf", "specops.bench.genai_perf_tool:GenaiPerf")
BENCH_TOOLS.register("aiperf", "specops.bench.aiperf_tool:AIPerf")
DEFAULT_TOOL = "genai-perf"


def bench_tool(name: str) -> BenchTool:
    return BENCH_TOOLS.get(name)()
