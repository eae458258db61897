"""`specops plan`: every step, command and rendered file of a run, without starting anything."""
from __future__ import annotations

import shlex
from pathlib import Path

from specops.backends.base import Backend
from specops.bench.sampling import planned
from specops.bench.tool import BenchJob, BenchTool
from specops.draft.gpu_plan import synthesis_commands, training_step
from specops.draft.modes import MODE_SUMMARY
from specops.pipeline.backend import backend_for, synthesis_backend_for, tool_for
from specops.pipeline.benchmark import bench_job, choose_design, interleaved_job
from specops.profile.loader import LoadedProfile
from specops.profile.schema import Profile
from specops.profile.workload import decided
from specops.results.durable import REPORT_NAMES
from specops.results.paired import Design
from specops.run.plan_step import PlanStep
from specops.run.variant import BASE, SPECULATIVE, Variant, base_method, variants_of
from specops.settings import cache_root


def _benchmark_step(p: Profile, backend: Backend, tool: BenchTool, variant: Variant) -> PlanStep:
    run = Path(f"artifacts/{p.name}/<run-id>")
    b = p.benchmark
    workload = decided(p, planned(b))

    def job_of(v: Variant) -> BenchJob:
        return bench_job(tool, backend, None, v, Path("<target checkpoint>"), b, workload, run, 0)

    job, why_not = job_of(variant), None
    if b.interleave and p.comparison.baseline:
        # the pair the run measures together: speculative first, as measure_group takes them
        pair = [job_of(Variant(SPECULATIVE, p.method)), job_of(Variant(BASE, base_method()))]
        design, why_not = choose_design(tool, pair, b.pairing)
        if design is Design.REQUESTS and variant.name == BASE:
            return PlanStep("benchmark", commands=["in the speculative variant's interleaved run (above)"])
        if design is Design.REQUESTS:
            rounds = f" x {b.rounds} rounds, the order of the variants flipped every round" if b.rounds > 1 else ""
            return PlanStep("benchmark", commands=[
                shlex.join(tool.interleaved_command(interleaved_job(tool, pair, run, 0))),
                f"one run for both variants, requests interleaved{rounds}", *backend.benchmark_notes(variant)])
    order = ("alternating with the other variant, both servers up" if b.interleave
             else "back to back on this variant's server")
    rounds = [f"x {b.rounds} rounds, {order} (warm-up requests in the first only)"] if b.rounds > 1 else []
    design_note = [f"round blocks, not requests interleaved: {why_not}"] if why_not else []
    return PlanStep("benchmark", commands=[shlex.join(tool.command(job)), *rounds, *design_note,
                                           *backend.benchmark_notes(variant)])


def training_plan(p: Profile) -> list[PlanStep]:
    train, data = p.draft.train, p.draft.train.data
    where = data.endpoint or "the target served on this profile's backend (speculation off)"
    sources = ", ".join(data.prompts + ([data.conversations] if data.conversations else []))
    if data.server is not None:
        synthesize = synthesis_commands(data, synthesis_backend_for(p), str(cache_root()))
    else:
        synthesize = [f"{data.num_samples} prompts ({sources}; HumanEval 0..{data.humaneval_holdout - 1} held out) -> "
                      f"{where}, {data.max_tokens} tokens each, {data.concurrency} in flight -> "
                      f"{cache_root()}/train-data/<key>/data.jsonl (resumable)"]
    summary = (f"{MODE_SUMMARY[train.mode]}, base frozen, {train.epochs:g} epochs, batch {train.batch_size}, "
               f"seq {train.seq_len}, lr {train.lr:g} -> {cache_root()}/drafts/<key>/export")
    if train.gpu is None:
        return [PlanStep("synthesize", commands=synthesize), PlanStep("train", commands=[summary])]
    commands, files = training_step(train, p.method.draft_length(), p.name, str(cache_root()))
    return [PlanStep("synthesize", commands=synthesize), PlanStep("train", commands=[summary, *commands], files=files)]


def build_plan(loaded: LoadedProfile) -> list[tuple[str, list[PlanStep]]]:
    p = loaded.profile
    backend, tool = backend_for(p), tool_for(p)
    sources = [f"target: {p.target.source}"] + ([f"draft: {p.draft.source}"] if p.draft and p.draft.source else [])
    head = [
        PlanStep("validate", commands=[f"profile {loaded.path} (sha256 {loaded.sha256[:12]})"]),
        PlanStep("download", commands=[f"{s} -> {cache_root()}" for s in sources]),
    ]
    if p.draft is not None and p.draft.train is not None:
        head.extend(training_plan(p))
    sections = [("run", head)]
    for variant in variants_of(p.method, p.comparison.baseline):
        steps = backend.plan(variant, None, None)
        steps.append(PlanStep("check", commands=[
            f"smoke request, then {p.comparison.lossless_prompts} prompts x {p.comparison.lossless_max_tokens} "
            "tokens at temperature 0 (compared with the other variant)"]))
        steps.append(_benchmark_step(p, backend, tool, variant))
        steps.append(PlanStep("acceptance", commands=[backend.acceptance_source(variant)]))
        steps.append(PlanStep("teardown", commands=[f"SIGTERM, SIGKILL after {p.serving.stop_timeout_s:g}s"]))
        sections.append((f"variant {variant.name} (method {variant.method.kind})", steps))
    sections.append(("report", [PlanStep("report", commands=[
        f"artifacts/{p.name}/<run-id>/: {', '.join(REPORT_NAMES)}; "
        "the RunResult appended to the results database"])]))
    return sections


def format_plan(loaded: LoadedProfile) -> str:
    lines = [f"plan for {loaded.profile.name}: method {loaded.profile.method.kind} on backend "
             f"{loaded.profile.backend.kind}"]
    for title, steps in build_plan(loaded):
        lines.append(f"\n== {title}")
        for step in steps:
            lines.append(f"[{step.step}]")
            lines += [f"  $ {c}" for c in step.commands]
            for name, content in step.files.items():
                lines.append(f"  --- {name}")
                lines += [f"  | {line}" for line in content.rstrip().splitlines()]
    return "\n".join(lines)
