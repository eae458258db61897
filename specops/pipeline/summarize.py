"""Fold what a run measured (or how it failed) into its RunResult."""
from __future__ import annotations

import subprocess
import time
import uuid
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from specops.backends.base import Backend
from specops.bench.sampling import Workload
from specops.bench.tool import BenchTool
from specops.cost.nvml import host_record
from specops.pipeline.check import cache_primed
from specops.profile.loader import LoadedProfile
from specops.results.calibration import host_calibration
from specops.results.categories import WorkloadRecord, category_figures, normalized_mix, prompt_mix
from specops.results.metrics import DrafterCache
from specops.results.model import (
    BenchmarkRecord,
    Failure,
    Lossless,
    ModelRecord,
    Phases,
    RunResult,
    ServedRecord,
    SoftwareRecord,
    Status,
    VariantRecord,
    Verdict,
    Window,
)
from specops.results.paired import Design, Speedup
from specops.results.predicted import Predicted
from specops.results.role import RunRole
from specops.results.speedup import paired_speedup
from specops.run.rundir import RunDir
from specops.run.variant import BASE, SPECULATIVE, Variant
from specops.settings import cache_root
from specops.sources.schemes import ModelArtifact

MEASURED_PHASES = ("serve", "check", "benchmark", "draft")  # draft: synthesis + training, when not cached
PACKAGES = ("specops", "prefect", "torch", "transformers", "tritonclient", "nvidia-pytriton", "genai-perf",
            "numpy", "pandas", "pydantic", "huggingface_hub", "gguf", "nvidia-modelopt")
REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass
class RunFacts:
    """What the flow learns as it goes; a failed run has only part of it."""

    models: dict[str, ModelArtifact] = field(default_factory=dict)
    variants: list[VariantRecord] = field(default_factory=list)
    lossless: Lossless | None = None
    cached_steps: dict[str, bool] = field(default_factory=dict)
    servers: dict[str, str] = field(default_factory=dict)  # server tool -> the version it reported
    window: Window | None = None  # serve -> teardown, with the slots held for it
    design: tuple[Design, str | None] = (Design.ROUNDS, None)  # how the variants were paired, why not requests
    predicted: Predicted | None = None  # the replay's figures for the run's setting, where the backend has one
    workload: Workload | None = None  # the prompts (None: the run failed before reading them)


def package_versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def git_state(root: Path = REPO_ROOT) -> tuple[str | None, bool | None]:
    """(commit, dirty) of the specops checkout that ran, or (None, None) for an installed copy."""
    if not (root / ".git").exists():
        return None, None
    try:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                                timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None, None
    return commit or None, bool(dirty)


def software_record() -> SoftwareRecord:
    commit, dirty = git_state()
    packages = package_versions()
    return SoftwareRecord(specops=packages.get("specops") or "unknown", git_commit=commit, git_dirty=dirty,
                          packages=packages)


def benchmark_record(loaded: LoadedProfile, backend: Backend, tool: BenchTool, variant: Variant,
                     design: tuple[Design, str | None] = (Design.ROUNDS, None),
                     workload: Workload | None = None) -> BenchmarkRecord:
    b = loaded.profile.benchmark
    api = tool.pick_api(backend.registration.apis, workload.chat if workload and workload.request else None)
    return BenchmarkRecord(tool=tool.name, tool_version=tool.version(), api=api.value if api else "none",
                           prompts=b.prompts, num_requests=b.num_requests, warmup_requests=b.warmup_requests,
                           output_tokens=b.output_tokens, concurrency=b.concurrency, rounds=b.rounds,
                           interleave=b.interleave, design=design[0], design_note=design[1],
                           notes=backend.benchmark_notes(variant))


def phases(run: RunDir, now: float) -> Phases:
    """Where the run's wall went up to `now` (epoch seconds): each step summed per variant, and each step's share
    of the wall with every moment counted once, so that the parts and the orchestration overhead add up to it."""
    detail = {p: dict(v) for p, v in run.progress.phases.items()}
    wall = now - run.progress.started_at
    parts = run.progress.shares_s(until=run.progress.started_mono + wall)
    return Phases(wall_s=wall, phase_s={p: sum(detail.get(p, {}).values()) for p in MEASURED_PHASES},
                  detail=detail, measured_s=run.progress.busy_s(MEASURED_PHASES),
                  parts_s={p: round(s, 3) for p, s in parts.items()})


def failure_of(run: RunDir, error: BaseException) -> Failure:
    step, variant = run.progress.failed_at or ("flow", None)
    logs = sorted(str(p) for p in (run.path / "logs").glob("*")) if (run.path / "logs").is_dir() else []
    message = f"{type(error).__name__}: {error}".strip()
    return Failure(step=step, variant=variant or None, error=message, logs=logs)


def verdict_of(lossless: Lossless | None, failure: Failure | None,
               interrupted: bool = False) -> tuple[Verdict, list[str]]:
    if failure is not None:
        where = failure.step + (f" ({failure.variant})" if failure.variant else "")
        if interrupted:
            return Verdict.INTERRUPTED, [f"interrupted at {where}: {failure.error}"]
        return Verdict.FAILED, [f"failed at {where}: {failure.error}"]
    if lossless is None:
        return Verdict.UNCHECKED, ["the lossless check did not run (comparison.baseline is false or no prompts)"]
    if lossless.valid:
        return Verdict.VALID, [f"{lossless.compared} prompts identical at temperature 0"]
    reasons = list(lossless.reasons)
    if lossless.first is not None:
        d = lossless.first
        reasons.append(f"{lossless.mismatches}/{lossless.compared} prompts differ; first at prompt {d.prompt_index}, "
                       f"character {d.position}: base {d.base!r} vs speculative {d.speculative!r}")
    return Verdict.INVALID, reasons


def status_of(verdict: Verdict, require_lossless: bool) -> Status:
    """A failed step fails the run; outputs that differ from the base's make it invalid unless the profile
    allows lossy speculation (comparison.require_lossless false: then it is ok, and its verdict still says so)."""
    if verdict in (Verdict.FAILED, Verdict.INTERRUPTED):
        return Status(verdict.value.lower())
    if verdict is Verdict.INVALID and require_lossless:
        return Status.INVALID
    return Status.OK


def run_result(loaded: LoadedProfile, run: RunDir, backend: Backend, tool: BenchTool, facts: RunFacts,
               error: BaseException | None = None, role: RunRole = RunRole()) -> RunResult:
    """The run's record, in its role: status failed when `error` is given, invalid when outputs differ."""
    p = loaded.profile
    now = time.time()
    failure = failure_of(run, error) if error is not None else None
    # Not an Exception: KeyboardInterrupt, a signal (Prefect's TerminationSignal), a cancel
    verdict, reasons = verdict_of(facts.lossless, failure, error is not None and not isinstance(error, Exception))
    status = status_of(verdict, p.comparison.require_lossless)
    speedup, workload = measured_speedup(facts, p.benchmark.mix)
    host = host_record()
    return RunResult(
        uid=uuid.uuid4().hex, run_id=run.run_id, run_dir=str(run.path), profile=p.name,
        profile_sha256=loaded.sha256, profile_source=str(loaded.path), overrides=list(loaded.overrides),
        role=role, method=p.method.kind, draft_length=p.method.draft_length() or None, backend=p.backend.kind,
        started_at=run.progress.started_at, finished_at=now,
        status=status, verdict=verdict, reasons=reasons,
        models=[ModelRecord(role=role, source=a.source, revision=a.revision, sha256=a.sha256, path=str(a.path))
                for role, a in facts.models.items()],
        host=host, software=software_record(),
        served=ServedRecord(backend=p.backend.kind, servers=dict(facts.servers), **backend.served()),
        benchmark=benchmark_record(loaded, backend, tool, Variant(SPECULATIVE, p.method), facts.design,
                                   facts.workload),
        variants=list(facts.variants), speedup=speedup, lossless=facts.lossless, phases=phases(run, now),
        cached_steps=dict(facts.cached_steps), failure=failure, window=facts.window,
        drafter_cache=drafter_cache(p, facts.workload), predicted=facts.predicted, workload=workload,
        calibration=host_calibration(cache_root(), p.name, host.cpu_model),
    )


def measured_speedup(facts: RunFacts, asked_mix: dict[str, float]) -> tuple[Speedup | None, WorkloadRecord | None]:
    """The run's speedup (over its categories' mix where its prompts have categories) and its workload's record
    with each category's figures."""
    by_name = {v.name: v for v in facts.variants}
    spec, base = by_name.get(SPECULATIVE), by_name.get(BASE)
    w = facts.workload
    # the categories of the requests measured (a later round also measures the warm-up's prompt: the tool wraps)
    measured = list(dict.fromkeys(c for s in (spec.samples if spec else []) if w is not None
                                  and (c := w.categories[s.prompt]) is not None))
    mix, mix_note = normalized_mix(asked_mix, measured)
    speedup, figures = None, []
    if spec is not None and base is not None and spec.samples and base.samples:
        throughput = (spec.metrics.output_token_throughput_tok_s / base.metrics.output_token_throughput_tok_s
                      if spec.metrics and base.metrics and base.metrics.output_token_throughput_tok_s else None)
        weights = prompt_mix(w.categories, mix) if w is not None and mix else None
        speedup = paired_speedup(spec.samples, base.samples, throughput_ratio=throughput, design=facts.design[0],
                                 mix=weights)
        if w is not None and mix:
            figures = category_figures(spec.samples, base.samples, w.categories, mix, facts.design[0],
                                       facts.predicted.by_category if facts.predicted else None)
    if w is None:
        return speedup, None
    record = WorkloadRecord(label=w.label, api=w.request.name if w.request else "unknown",
                            api_note=w.request.note if w.request else "", seed=w.seed,
                            prompt_categories=list(w.categories), mix=mix, mix_note=mix_note, categories=figures)
    return speedup, record


def drafter_cache(profile, workload: Workload | None) -> DrafterCache | None:
    """The speculative method's cross-request cache policy, and whether the run primed it (None: it has none)."""
    kept = profile.method.cross_request_cache()
    if kept is None:
        return None
    primed = cache_primed(workload, profile.benchmark.rounds, profile.comparison.baseline) if kept and workload else []
    return DrafterCache(on=kept > 0, max_cached_requests=kept, primed=primed)


def ended_failed(result: RunResult, failure: Failure, interrupted: bool = False) -> RunResult:
    """A run that measured, then failed (its report could not be written, or it was killed while writing it):
    FAILED there (INTERRUPTED when an interrupt ended it), what it measured kept. A run that had already failed
    keeps its own failure."""
    if result.failure is not None:
        return result
    verdict = Verdict.INTERRUPTED if interrupted else Verdict.FAILED
    return result.model_copy(update={"status": Status(verdict.value.lower()), "verdict": verdict, "failure": failure})
