"""The AIPerf adapter: its command line, its request body, where it looks for AIPerf, and its exports
(tests/unit/bench/fixtures/aiperf/: a real AIPerf 0.13.0 run against tritonserver, captured by
tests/integration/bench/test_bench_aiperf_live.py)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import jinja2
import pytest

from specops.bench import aiperf_tool
from specops.bench.aiperf_endpoints import TEMPLATE
from specops.bench.aiperf_exports import (
    AGGREGATES,
    INPUTS,
    RECORDS,
    answering_models,
    parse_metrics,
    profiling_records,
    records_metrics,
    request_samples,
)
from specops.bench.aiperf_tool import AIPerf
from specops.bench.target import Api, BenchTarget
from specops.bench.tool import BENCH_TOOLS, BenchJob, ExportError, InterleavedJob, interleave_blocker, prompt_index
from specops.profile.errors import ProfileError
from specops.profile.loader import load_profile

FIXTURE = Path(__file__).parent / "fixtures" / "aiperf"
FIXTURE_PROMPTS = json.loads((FIXTURE / "prompts.json").read_text())  # the job's prompt list, in order


def _job(tmp_path: Path, streaming: bool = True, warmup: int = 1, inputs: dict | None = None) -> BenchJob:
    target = BenchTarget(model="base", endpoints={Api.TRITON_GENERATE: "http://127.0.0.1:8000"},
                         streaming=streaming, inputs=inputs or {})
    return BenchJob(target=target, api=Api.TRITON_GENERATE, tokenizer="/models/tok", prompts=["a", "b", "c"],
                    requests=2, warmup=warmup, output_tokens=32, concurrency=2, artifact_dir=tmp_path / "aiperf",
                    log_path=tmp_path / "aiperf.log", timeout_s=60)


def _flag(cmd: list[str], name: str) -> str:
    return cmd[cmd.index(name) + 1]


def test_registered_and_picks_tritons_generate_endpoint():
    tool = BENCH_TOOLS.get("aiperf")()
    assert tool.pick_api((Api.KSERVE_VLLM, Api.TRITON_GENERATE)) is Api.TRITON_GENERATE
    assert tool.pick_api((Api.KSERVE_LLMAPI,)) is None


def test_command_streams_from_generate_stream_with_the_length_pinned(tmp_path):
    cmd = AIPerf().command(_job(tmp_path))
    assert cmd[1:3] == ["profile", "-m"] and _flag(cmd, "-m") == "base"
    assert _flag(cmd, "--endpoint-type") == "template" and "--streaming" in cmd
    # The model's path is in the URL and the route is appended to it (AioHttpTransport.get_url)
    assert (_flag(cmd, "--url"), _flag(cmd, "--custom-endpoint")) == ("http://127.0.0.1:8000/v2/models/base",
                                                                      "/generate_stream")
    assert (_flag(cmd, "--request-count"), _flag(cmd, "--warmup-request-count"), _flag(cmd, "--concurrency")) \
        == ("2", "1", "2")
    assert _flag(cmd, "--dataset-sampling-strategy") == "sequential"  # warm-up takes prompt 0, then 1, 2, ...
    extra = json.loads(_flag(cmd, "--extra-inputs"))
    assert extra["response_field"] == "text_output" and extra["exclude_input_in_output"] is True
    assert json.loads(extra["sampling_parameters"]) == {"max_tokens": 32, "min_tokens": 32, "ignore_eos": True,
                                                        "temperature": 0.0}


def test_non_streaming_targets_use_generate_and_the_models_own_inputs_travel(tmp_path):
    cmd = AIPerf().command(_job(tmp_path, streaming=False, warmup=0, inputs={"lora_name": "x"}))
    assert _flag(cmd, "--custom-endpoint") == "/generate" and "--streaming" not in cmd
    assert "--warmup-request-count" not in cmd
    assert json.loads(_flag(cmd, "--extra-inputs"))["lora_name"] == "x"


@pytest.mark.parametrize("prompt", ['def f(x):\n    """Say "hi" & <go>"""\n', "naïve \\ ünïcode\t"])
def test_template_renders_the_prompt_as_json_under_aiperfs_autoescaping(prompt):
    # aiperf/endpoints/template_endpoint.py (0.13.0): Environment(autoescape=True).from_string(...)
    body = jinja2.Environment(autoescape=True).from_string(TEMPLATE).render(text=prompt, stream=True)
    assert json.loads(body) == {"text_input": prompt, "stream": True}


def test_preflight_names_the_fix_when_aiperf_is_missing(monkeypatch, tmp_path):
    monkeypatch.setenv(aiperf_tool.EXECUTABLE_VAR, str(tmp_path / "nowhere" / "aiperf"))
    [problem] = AIPerf().preflight()
    assert "AIPerf not found" in problem and "make install" in problem and aiperf_tool.EXECUTABLE_VAR in problem


def test_preflight_refuses_another_aiperf_version(monkeypatch, tmp_path):
    stand_in = tmp_path / "aiperf"  # STAND-IN executable: an AIPerf that says it is 0.12.0
    stand_in.write_text("#!/bin/sh\necho 0.12.0\n")
    stand_in.chmod(0o755)
    monkeypatch.setenv(aiperf_tool.EXECUTABLE_VAR, str(stand_in))
    [problem] = AIPerf().preflight()
    assert "AIPerf 0.12.0" in problem and aiperf_tool.VERSION in problem


def test_a_profile_whose_backend_aiperf_cannot_drive_is_refused_at_load():
    with pytest.raises(ProfileError) as caught:
        load_profile("eagle3-trtllm", overrides=["benchmark.tool=aiperf"])
    assert "benchmark.tool" in str(caught.value) and "triton/generate" in str(caught.value)


def test_exports_give_aggregates_and_one_sample_per_measured_request():
    metrics = parse_metrics(FIXTURE)
    samples = request_samples(FIXTURE, prompt_index(FIXTURE_PROMPTS), round_=3)
    assert metrics.request_count == len(samples) > 0
    assert sorted(s.prompt for s in samples) == list(range(1, len(samples) + 1))  # prompt 0 was the warm-up
    assert {s.round for s in samples} == {3}
    mean_ms = 1000 * sum(s.latency_s for s in samples) / len(samples)
    assert mean_ms == pytest.approx(metrics.request_latency_ms_avg, rel=1e-9)
    assert sum(s.output_tokens for s in samples) / len(samples) == pytest.approx(metrics.output_sequence_length_avg)
    assert metrics.time_to_first_token_ms_p50 <= metrics.request_latency_ms_p99


def _copy(tmp_path: Path) -> Path:
    out = tmp_path / "export"
    out.mkdir()
    for name in (AGGREGATES, RECORDS, INPUTS):
        shutil.copy(FIXTURE / name, out / name)
    return out


def test_failed_requests_or_an_incomplete_run_are_errors(tmp_path):
    export = _copy(tmp_path)
    data = json.loads((export / AGGREGATES).read_text())
    (export / AGGREGATES).write_text(json.dumps(data | {"error_summary": [{"error": "HTTP 400", "count": 2}]}))
    with pytest.raises(ExportError, match="requests failed.*HTTP 400"):
        parse_metrics(export)
    (export / AGGREGATES).write_text(json.dumps(data | {"is_complete": False}))
    with pytest.raises(ExportError, match="did not complete"):
        parse_metrics(export)


def test_a_request_whose_prompt_the_job_did_not_send_is_an_error(tmp_path):
    export = _copy(tmp_path)
    with pytest.raises(ExportError, match="no prompt the job asked for"):
        request_samples(export, prompt_index(FIXTURE_PROMPTS[:1]), round_=0)


def test_missing_exports_name_the_file(tmp_path):
    with pytest.raises(ExportError, match=AGGREGATES):
        parse_metrics(tmp_path)


# --- interleaved runs: tests/unit/bench/fixtures/aiperf-interleaved/ is a real AIPerf 0.13.0 run against two
# tritonservers ("fast" and "slow" stand-in engines, 5 measured + 1 warm-up request each), captured by
# tests/integration/bench/test_bench_aiperf_interleaved_live.py.
INTERLEAVED = Path(__file__).parent / "fixtures" / "aiperf-interleaved"


def _pair(tmp_path: Path, **changes) -> list[BenchJob]:
    first = _job(tmp_path, warmup=1)
    first = BenchJob(**{**first.__dict__, "concurrency": 1})
    second = BenchJob(**{**first.__dict__, "target": BenchTarget(
        model="speculative", endpoints={Api.TRITON_GENERATE: "http://127.0.0.1:9000"}), **changes})
    return [first, second]


def test_an_interleaved_command_names_each_servers_model_in_its_url_and_counts_per_server(tmp_path):
    jobs = _pair(tmp_path)
    job = InterleavedJob(tuple(jobs), artifact_dir=tmp_path / "il" / "aiperf", log_path=tmp_path / "il.log",
                         timeout_s=60)
    cmd = AIPerf().interleaved_command(job)
    urls = [cmd[i + 1] for i, flag in enumerate(cmd) if flag == "--url"]
    assert urls == ["http://127.0.0.1:8000/v2/models/base", "http://127.0.0.1:9000/v2/models/speculative"]
    assert _flag(cmd, "--custom-endpoint") == "/generate_stream"
    # each prompt is in the input file once per server, in a row, so the round robin gives each server one copy
    assert (_flag(cmd, "--request-count"), _flag(cmd, "--warmup-request-count")) == ("4", "2")
    assert _flag(cmd, "--export-level") == "raw"  # the answers name the model that gave them
    assert _flag(cmd, "--input-file") == str(tmp_path / "il" / "aiperf-input.jsonl")


@pytest.mark.parametrize(("change", "reason"), [
    ({"api": Api.OPENAI_COMPLETIONS}, "different APIs"),
    ({"target": BenchTarget(model="speculative", endpoints={Api.TRITON_GENERATE: "http://h:1"}, inputs={"x": 1})},
     "differ beyond their address"),
    ({"target": BenchTarget(model="speculative", endpoints={Api.TRITON_GENERATE: "http://h:1"}, streaming=False)},
     "differ beyond their address"),
    ({"target": BenchTarget(model="base", endpoints={Api.TRITON_GENERATE: "http://h:1"})}, "cannot be told apart"),
])
def test_aiperf_says_why_it_cannot_interleave_some_variants(tmp_path, change, reason):
    assert reason in AIPerf().interleave_blocker(_pair(tmp_path, **change))


def _openai(jobs: list[BenchJob], *aliases: str | None, no_alias: str | None = None) -> list[BenchJob]:
    return [BenchJob(**{**j.__dict__, "api": Api.OPENAI_COMPLETIONS, "target": BenchTarget(
        model=j.target.model, endpoints={Api.OPENAI_COMPLETIONS: f"http://h:{i}"}, alias=alias, no_alias=no_alias)})
        for i, (j, alias) in enumerate(zip(jobs, aliases, strict=True))]


def test_openai_servers_interleave_only_when_every_variant_answers_to_one_shared_alias(tmp_path):
    pair = _pair(tmp_path)
    shared = _openai(pair, "both", "both")
    assert AIPerf().interleave_blocker(shared) is None and Api.OPENAI_COMPLETIONS in AIPerf.interleaves
    job = InterleavedJob(tuple(shared), artifact_dir=tmp_path / "il" / "aiperf", log_path=tmp_path / "il.log",
                         timeout_s=60)
    cmd = AIPerf().interleaved_command(job)
    # one body for both servers names the alias; each answer names its own server's model (`model`)
    assert _flag(cmd, "-m") == "both" and _flag(cmd, "--export-level") == "raw"
    assert [cmd[i + 1] for i, flag in enumerate(cmd) if flag == "--url"] == ["http://h:0", "http://h:1"]
    assert _flag(AIPerf().command(shared[0]), "-m") == "base"  # a run of one server names the server's own model
    # no alias: each server answers to its own name only, or the backend says why it cannot take one
    assert "'speculative' answers to its own name only" in AIPerf().interleave_blocker(_openai(pair, "both", None))
    assert "names its model" in AIPerf().interleave_blocker(_openai(pair, None, None, no_alias="it echoes"))
    assert AIPerf().interleave_blocker(_openai(pair, None, None, no_alias="it echoes")).endswith("and it echoes")
    assert "different aliases (a, b)" in AIPerf().interleave_blocker(_openai(pair, "a", "b"))
    with pytest.raises(ValueError, match="no alias"):
        AIPerf().interleaved_command(InterleavedJob(tuple(_openai(pair, None, None)), tmp_path, tmp_path, 1))


def test_the_seam_refuses_interleaving_above_concurrency_one_and_tools_that_cannot(tmp_path):
    jobs = _pair(tmp_path)
    assert interleave_blocker(AIPerf(), jobs) is None
    busy = [BenchJob(**{**j.__dict__, "concurrency": 2}) for j in jobs]
    assert "concurrency 1" in interleave_blocker(AIPerf(), busy)
    assert interleave_blocker(BENCH_TOOLS.get("genai-perf")(), jobs) == "genai-perf drives one server per run"
    assert "only one variant" in interleave_blocker(AIPerf(), jobs[:1])
    with pytest.raises(ValueError, match="differ in prompts"):
        InterleavedJob((jobs[0], BenchJob(**{**jobs[1].__dict__, "prompts": ["z"]})), tmp_path, tmp_path, 1)


def test_each_interleaved_answer_is_credited_to_the_model_that_gave_it():
    answered = answering_models(INTERLEAVED)
    records = profiling_records(INTERLEAVED)
    assert len(answered) == 12 and len(records) == 10  # 2 warm-up answers are in the raw export only
    by_model = {"fast": [], "slow": []}
    for record in records:
        by_model[answered[record["metadata"]["x_request_id"]]].append(record)
    assert [len(v) for v in by_model.values()] == [5, 5]
    # the round robin alternates: measured requests 0, 2, 4... went to the first URL ("fast")
    assert {r["metadata"]["session_num"] % 2 for r in by_model["fast"]} == {0}
    assert max(r["metrics"]["request_latency"]["value"] for r in by_model["fast"]) < \
        min(r["metrics"]["request_latency"]["value"] for r in by_model["slow"])


def test_per_variant_figures_are_computed_as_aiperf_computes_its_own():
    # Over all the run's records, records_metrics must agree with AIPerf's own aggregates (same percentiles).
    mine, theirs = records_metrics(profiling_records(INTERLEAVED)), json.loads((INTERLEAVED / AGGREGATES).read_text())
    for key, ours in (("request_latency", "request_latency_ms"), ("time_to_first_token", "time_to_first_token_ms"),
                      ("inter_token_latency", "inter_token_latency_ms")):
        for stat in ("avg", "p50", "p99"):
            assert getattr(mine, f"{ours}_{stat}") == pytest.approx(theirs[key][stat], rel=1e-6), (key, stat)
    assert mine.request_count == 10
    assert mine.output_sequence_length_avg == pytest.approx(theirs["output_sequence_length"]["avg"])


def test_an_answer_that_names_no_model_is_an_error(tmp_path):
    shutil.copytree(INTERLEAVED, tmp_path / "run")
    raw = tmp_path / "run" / "profile_export_raw.jsonl"
    lines = raw.read_text().splitlines()
    broken = json.loads(lines[3])
    broken["responses"] = []
    raw.write_text("\n".join([*lines[:3], json.dumps(broken), *lines[4:]]) + "\n")
    with pytest.raises(ExportError, match="no answer naming its model"):
        answering_models(tmp_path / "run")
