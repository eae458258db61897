"""`specops plan`: every step, command and rendered file of a run, without starting anything."""
from __future__ import annotations

import shlex
from pathlib import Path

from specops.backends.base import Backend, PlanStep, Variant, load_backend, variants_of
from specops.bench import genai_perf
from specops.benchmark import genai_perf_request
from specops.draft.modes import MODE_SUMMARY
from specops.profile.loader import LoadedProfile
from specops.profile.schema import Profile
from specops.rundir import cache_root


def _genai_perf_step(loaded: LoadedProfile, backend: Backend, variant: Variant) -> PlanStep:
    run = Path(f"artifacts/{loaded.profile.name}/<run-id>")
    req = genai_perf_request(loaded.profile, backend.bench_target(None, variant), Path("<target checkpoint>"),
                             run / "inputs" / "genai_perf_input.jsonl", run / "genai-perf" / variant.name)
    return PlanStep("benchmark", commands=[shlex.join(genai_perf.build_command(req)), *backend.benchmark_notes()])


def training_plan(p: Profile) -> list[PlanStep]:
    train, data = p.draft.train, p.draft.train.data
    where = data.endpoint or "the target served on this profile's backend (speculation off)"
    sources = ", ".join(data.prompts + ([data.conversations] if data.conversations else []))
    return [
        PlanStep("synthesize", commands=[
            f"{data.num_samples} prompts ({sources}; HumanEval 0..{data.humaneval_holdout - 1} held out) -> "
            f"{where}, {data.max_tokens} tokens each, {data.concurrency} in flight -> "
            f"{cache_root()}/train-data/<key>/data.jsonl (resumable)"]),
        PlanStep("train", commands=[
            f"{MODE_SUMMARY[train.mode]}, base frozen, {train.epochs:g} epochs, batch {train.batch_size}, "
            f"seq {train.seq_len}, lr {train.lr:g} -> {cache_root()}/drafts/<key>/export"]),
    ]


def build_plan(loaded: LoadedProfile) -> list[tuple[str, list[PlanStep]]]:
    p = loaded.profile
    backend = load_backend(p)
    sources = [f"target: {p.target.source}"] + ([f"draft: {p.draft.source}"] if p.draft and p.draft.source else [])
    head = [
        PlanStep("validate", commands=[f"profile {loaded.path} (sha256 {loaded.sha256[:12]})"]),
        PlanStep("download", commands=[f"{s} -> {cache_root()}" for s in sources]),
    ]
    if p.draft is not None and p.draft.train is not None:
        head.extend(training_plan(p))
    sections = [("run", head)]
    for variant in variants_of(p):
        steps = backend.plan(variant, None, None)
        steps.append(PlanStep("check", commands=[
            f"smoke request, then {p.comparison.lossless_prompts} prompts x {p.comparison.lossless_max_tokens} "
            "tokens at temperature 0 (compared with the other variant)"]))
        steps.append(_genai_perf_step(loaded, backend, variant))
        steps.append(PlanStep("acceptance", commands=[backend.acceptance_source(variant)]))
        steps.append(PlanStep("teardown", commands=[f"SIGTERM, SIGKILL after {p.serving.stop_timeout_s:g}s"]))
        sections.append((f"variant {variant.name} (method {variant.method.kind})", steps))
    sections.append(("report", [PlanStep("report", commands=[
        f"artifacts/{p.name}/<run-id>/: comparison.csv, report.md, comparison.png, manifest.json"])]))
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
