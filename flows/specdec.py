"""The `specdec` flow: one profile, speculative vs base, served, checked, benchmarked, reported.

Only sequencing and teardown live here; every step is a task in tasks/.
"""
from __future__ import annotations

from prefect import flow

from flows.hooks import reap_servers
from flows.train_draft import prepare_trained_draft
from specops.backends.base import Variant, variants_of
from specops.report.results import VariantResult
from specops.rundir import cache_root
from tasks.benchmark import read_acceptance, run_genai_perf
from tasks.check import compare_check_outputs, generate_check_outputs, send_smoke_request
from tasks.models import check_draft_vocabulary, download_model
from tasks.profile import check_prerequisites, create_run_dir, validate_profile
from tasks.render import build_engine, render_repository
from tasks.report import publish_artifacts, write_report
from tasks.serve import start_server, stop_server


def measure_variant(loaded, variant: Variant, repo, target, run) -> tuple[VariantResult, list[str]]:
    """Serve one variant, check it, benchmark it, and always tear it down."""
    profile = loaded.profile
    server = start_server(profile, variant, repo, run)
    try:
        send_smoke_request(profile, server, variant, run)
        outputs = generate_check_outputs(profile, server, variant, run) if profile.comparison.baseline else []
        before = read_acceptance(profile, server, variant, settle=True)
        metrics = run_genai_perf(profile, server, variant, target, run)
        after = read_acceptance(profile, server, variant, settle=True)
    finally:
        stop_server(server, profile.serving.stop_timeout_s, run, variant)
    acceptance = after.since(before) if after is not None else None
    return VariantResult(variant.name, variant.method.kind, variant.model_name, metrics, acceptance), outputs


@flow(name="specdec", on_cancellation=[reap_servers], on_crashed=[reap_servers], log_prints=True)
def specdec(profile: str = "ngram-local", overrides: list[str] | None = None, run_id: str | None = None):
    """Deploy and benchmark one speculative-decoding profile against its base model."""
    loaded = validate_profile(profile, list(overrides or []))
    check_prerequisites(loaded)
    run = create_run_dir(loaded, run_id)
    cache_dir = cache_root()
    target = download_model(loaded.profile.target.source, cache_dir)
    draft = None
    if loaded.profile.draft is not None and loaded.profile.draft.train is not None:
        draft, _ = prepare_trained_draft(loaded, target, run, cache_dir)
    elif loaded.profile.draft is not None:
        draft = download_model(loaded.profile.draft.source, cache_dir)
        check_draft_vocabulary(target, draft)
    variants = variants_of(loaded.profile)
    engines = {v.name: build_engine(loaded.profile, v, target, draft, cache_dir) for v in variants}
    repos = {v.name: render_repository(loaded.profile, v, target, draft, cache_dir, engines[v.name]) for v in variants}
    results, outputs = [], {}
    for variant in variants:
        result, outputs[variant.name] = measure_variant(loaded, variant, repos[variant.name], target, run)
        results.append(result)
    lossless = None
    if loaded.profile.comparison.baseline and loaded.profile.comparison.lossless_prompts:
        lossless = compare_check_outputs(outputs["base"], outputs["speculative"], run)
    models = {"target": target} | ({"draft": draft} if draft else {})
    report = write_report(run, loaded, results, lossless, models)
    publish_artifacts(report, loaded.profile.name)
    return report
