"""genai-perf against a served variant, and the backend's acceptance counters."""
from __future__ import annotations

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE

from specops.backends.base import Server, Variant, load_backend
from specops.benchmark import run_benchmark
from specops.profile.schema import Profile
from specops.report.results import Acceptance
from specops.rundir import RunDir
from specops.sources.base import ModelArtifact


@task(cache_policy=NO_CACHE, persist_result=False)
def run_genai_perf(profile: Profile, server: Server, variant: Variant, target: ModelArtifact,
                   run: RunDir) -> dict[str, float]:
    """Profile the variant with genai-perf; exports land in genai-perf/<variant>/."""
    log = get_run_logger()
    log.info("genai-perf: %s, %d requests x %d tokens, concurrency %d", variant.name,
             profile.benchmark.num_requests, profile.benchmark.output_tokens, profile.benchmark.concurrency)
    with run.timed("benchmark", variant.name):
        metrics = run_benchmark(profile, server, variant, target, run)
    log.info("%s: %.2f output tokens/s", variant.name, metrics.get("output_token_throughput_tok_s", float("nan")))
    return metrics


@task(cache_policy=NO_CACHE, persist_result=False)
def read_acceptance(profile: Profile, server: Server, variant: Variant, settle: bool = False) -> Acceptance | None:
    """Read the cumulative speculation counters from the backend's own source."""
    return load_backend(profile).acceptance(server, variant, settle)
