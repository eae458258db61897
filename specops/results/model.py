"""RunResult: everything one run measured and what produced it, as one typed record.

report.md, comparison.csv, the plot, manifest.json, the Prefect artifacts and the results
database are all rendered from this record; nothing re-reads a file the run already held.
"""
from __future__ import annotations

from enum import StrEnum

from pydantic import Field, model_validator

from specops.acceptance.model import Acceptance, analytical_bound
from specops.results.metrics import BenchMetrics, DrafterCache, Predicted, PromptSpread, Record, RequestSample, Window
from specops.results.role import RunRole, legacy_role

# Of the RunResult JSON; bump with every change of its fields (and a migration of stored records
# when old ones no longer load). 2: window, image identity, compute capability; 3: the pairing design
# (benchmark.design, speedup.design); 4: phases.measured_s (steps that overlapped counted once); 5: role and
# draft_length; 6: speedup.per_prompt; 7: drafter_cache, status interrupted; 8: predicted. Older records load as they
# are (design rounds, the role their notes said, no spread, cache or prediction), and an older specops refuses newer
# records naming both.
SCHEMA_VERSION = 8

# The speedup interval's level: what results record and every label prints.
LEVEL = 0.95


class Design(StrEnum):
    """How the variants' measurements are paired (pipeline.benchmark)."""

    REQUESTS = "requests"  # one tool run per round, the variants' requests alternating one by one
    ROUNDS = "rounds"  # one tool run per variant and round


class Status(StrEnum):
    OK = "ok"
    INVALID = "invalid"  # measured, but the speculative outputs differ from the base's
    FAILED = "failed"  # a step raised; `failure` says which
    INTERRUPTED = "interrupted"  # ended from outside (Ctrl-C, SIGTERM, a cancel): never judged; `failure`: where

    @property
    def ended_early(self) -> bool:
        return self in (Status.FAILED, Status.INTERRUPTED)


class Verdict(StrEnum):
    VALID = "VALID"
    INVALID = "INVALID"
    UNCHECKED = "UNCHECKED"
    FAILED = "FAILED"
    INTERRUPTED = "INTERRUPTED"


class ModelRecord(Record):
    role: str  # target | draft
    source: str
    revision: str | None = None
    sha256: str
    path: str


class GpuRecord(Record):
    index: int
    name: str
    memory_gb: float | None = None
    compute_capability: str | None = None  # NVML, e.g. "9.0": what a TensorRT engine is built for


class HostRecord(Record):
    hostname: str
    platform: str
    python: str
    cpu_model: str
    cores: int
    memory_gb: float
    gpus: list[GpuRecord] = []
    driver: str | None = None  # NVIDIA driver, when a GPU is present
    cuda: str | None = None  # CUDA version the driver supports


class SoftwareRecord(Record):
    specops: str
    git_commit: str | None = None
    git_dirty: bool | None = None
    packages: dict[str, str | None] = {}


class ServedRecord(Record):
    """What served the variants: the backend's image and framework, and the server's own version."""

    backend: str
    image: str | None = None
    image_id: str | None = None  # docker image inspect Id (sha256 of the image config) on the run's engine
    image_digest: str | None = None  # its RepoDigests entry (<repository>@sha256:...); None when not pulled
    framework: str | None = None  # e.g. "vLLM 0.15.1", "TensorRT-LLM 1.2.1", "specops runtime"
    version_source: str | None = None
    servers: dict[str, str] = {}  # server tool -> version it reported (e.g. tritonserver 2.59.0)


class BenchmarkRecord(Record):
    """How the variants were measured."""

    tool: str
    tool_version: str | None = None
    api: str
    prompts: str
    num_requests: int
    warmup_requests: int
    output_tokens: int
    concurrency: int
    rounds: int
    interleave: bool
    design: Design = Design.ROUNDS
    design_note: str | None = None  # why it is not interleaved requests
    notes: list[str] = []


class Cost(Record):
    """What the variant's server spent to produce its tokens over the benchmark windows."""

    output_tokens: float
    cpu_seconds: float | None = None  # the server's whole process tree (or its container)
    gpu_energy_j: float | None = None  # NVML total-energy counter over the server's GPUs
    cpu_source: str | None = None
    gpu_source: str | None = None  # where the energy came from, or why there is none

    @property
    def cpu_s_per_1k_tokens(self) -> float | None:
        return self._per_1k_tokens(self.cpu_seconds)

    @property
    def gpu_j_per_1k_tokens(self) -> float | None:
        return self._per_1k_tokens(self.gpu_energy_j)

    def _per_1k_tokens(self, quantity: float | None) -> float | None:
        """None where nothing was measured or no token was produced to divide by."""
        return None if quantity is None or not self.output_tokens else 1000 * quantity / self.output_tokens


class VariantRecord(Record):
    name: str  # speculative | base
    method: str
    model: str
    metrics: BenchMetrics | None = None  # averaged over rounds
    rounds: list[BenchMetrics] = []
    samples: list[RequestSample] = []
    acceptance: Acceptance | None = None
    cost: Cost | None = None


class Speedup(Record):
    """Speculative over base output tokens/s, paired prompt by prompt, with an interval over the design's
    independent unit of noise (results.speedup)."""

    point: float
    low: float | None = None
    high: float | None = None
    level: float = LEVEL
    prompts: int
    rounds: int
    resampled: str  # the interval's unit and method, or why there is no interval
    throughput_ratio: float | None = None  # ratio of the tools' aggregate tokens/s, for reference
    design: Design = Design.ROUNDS
    per_prompt: PromptSpread | None = None  # None: recorded before schema 6

    def text(self) -> str:
        """The headline as a person says it, e.g. `1.31x faster (95% interval 1.18-1.45; 8 prompts, requests
        interleaved)`, `0.85x, slower (...)`, `1.02x (..., cannot tell from 1.00x; ...)`; all speedups print this."""
        if self.has_interval:
            faster, slower = self.low > 1.0, self.high < 1.0  # type: ignore[operator]
            interval = (f"{self.level:.0%} interval {self.low:.2f}-{self.high:.2f}"
                        + ("" if faster or slower else ", cannot tell from 1.00x"))
        else:  # the point as printed says which way
            faster, slower = round(self.point, 2) > 1.0, round(self.point, 2) < 1.0
            interval = f"no interval: {self.no_interval_reason}"
        direction = " faster" if faster else ", slower" if slower else ""
        return (f"{self.point:.2f}x{direction} ({interval}; {self.prompts} prompt{'s' * (self.prompts != 1)}"
                f"{f' x {self.rounds} rounds' if self.rounds > 1 else ''}, "
                f"{'requests interleaved' if self.design is Design.REQUESTS else 'round blocks'})")

    @property
    def has_interval(self) -> bool:
        return self.low is not None and self.high is not None

    @property
    def no_interval_reason(self) -> str:  # one short clause; `resampled` keeps the whole reason and the remedy
        if (self.rounds if self.design is Design.ROUNDS else self.prompts) < 2:
            return "one round block per variant" if self.design is Design.ROUNDS else "one prompt"
        return self.resampled.removeprefix("none:").split(";")[0].strip() or "none computed"

    @property
    def half_width(self) -> float | None:
        """Half the interval, relative to the point estimate."""
        return (self.high - self.low) / 2 / self.point if self.has_interval and self.point else None  # type: ignore


class Divergence(Record):
    prompt_index: int
    position: int  # first differing character of the output
    base: str  # a window of each output around the divergence
    speculative: str


class Lossless(Record):
    compared: int
    mismatches: int
    first: Divergence | None = None
    reasons: list[str] = []

    @property
    def valid(self) -> bool:
        return self.mismatches == 0 and not self.reasons


class Failure(Record):
    step: str  # e.g. "serve", "benchmark"
    variant: str | None = None
    error: str  # exception type and message
    logs: list[str] = []  # log files of the run, for the next person to read


class Phases(Record):
    wall_s: float
    phase_s: dict[str, float] = {}  # serve, check, benchmark, draft: summed over variants
    detail: dict[str, dict[str, float]] = {}  # phase -> variant -> seconds

    # The wall time inside those phases counted once where steps overlapped (a group's servers start side by side);
    # None in records from before it was kept, whose steps never overlapped.
    measured_s: float | None = None

    @property
    def measured(self) -> float:
        return sum(self.phase_s.values()) if self.measured_s is None else self.measured_s

    @property
    def overhead_s(self) -> float:
        return self.wall_s - self.measured


class RunResult(Record):
    schema_version: int = SCHEMA_VERSION
    uid: str  # globally unique (the database key)
    run_id: str  # the run directory's name
    run_dir: str
    profile: str
    profile_sha256: str
    profile_source: str
    overrides: list[str] = []
    role: RunRole = RunRole()
    method: str
    draft_length: int | None = None  # K the speculative variant served (None: its method has none)
    backend: str
    started_at: float
    finished_at: float
    status: Status
    verdict: Verdict
    reasons: list[str] = []
    models: list[ModelRecord] = []
    host: HostRecord
    software: SoftwareRecord
    served: ServedRecord
    benchmark: BenchmarkRecord
    variants: list[VariantRecord] = []
    speedup: Speedup | None = None
    lossless: Lossless | None = None
    phases: Phases
    cached_steps: dict[str, bool] = {}  # step -> served from the cache
    failure: Failure | None = None
    notes: list[str] = Field(default_factory=list)
    window: Window | None = None  # None: no server was started (and records from before it existed)
    drafter_cache: DrafterCache | None = None  # None: the method keeps no cross-request cache (or schema < 7)
    predicted: Predicted | None = None  # None: no replay of this method on this backend (or schema < 8)

    @model_validator(mode="before")
    @classmethod
    def _role_of_old_records(cls, data):
        if isinstance(data, dict) and data.get("schema_version", 1) < 5 and "role" not in data:
            data = {**data, "role": legacy_role(data)}
        return data

    @property
    def waited_s(self) -> float:
        """What the run spent queued for its accelerator slots (behind other runs, not orchestration)."""
        return self.window.waited_s if self.window else 0.0

    @property
    def overhead_s(self) -> float:
        """The flow's wall time outside serve, check, benchmark, draft and the slot queue."""
        return self.phases.overhead_s - self.waited_s

    def variant(self, name: str) -> VariantRecord | None:
        return next((v for v in self.variants if v.name == name), None)

    @property
    def bound(self) -> float | None:
        spec, base = self.variant("speculative"), self.variant("base")
        return analytical_bound(spec.acceptance if spec else None, base.acceptance if base else None)
