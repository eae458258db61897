"""Acceptance parsers on response shapes written down from the upstream sources named per test."""
from __future__ import annotations

import json

import pytest

from specops.acceptance import from_iteration_stats, from_perf_metrics, from_vllm_metrics
from specops.acceptance.trtllm_iter_stats import accumulate


def test_trtllm_return_perf_metrics_http_generate_shape():
    """tensorrtllm_backend all_models/inflight_batcher_llm/ensemble/config.pbtxt outputs
    acceptance_rate (TYPE_FP32 [1]), total_accepted_draft_tokens, total_draft_tokens (TYPE_INT32 [1])
    (/work/shared/reference/tensorrtllm_backend, c1e19638); the generate endpoint returns outputs as
    JSON fields beside text_output, as in the Triton tutorial's sample
    {"model_name":"ensemble","model_version":"1",...,"text_output":...}."""
    responses = [
        {"model_name": "ensemble", "model_version": "1", "text_output": "ML is", "acceptance_rate": 0.5,
         "total_accepted_draft_tokens": 10, "total_draft_tokens": 20},
        {"model_name": "ensemble", "model_version": "1", "text_output": "x", "acceptance_rate": [0.25],
         "total_accepted_draft_tokens": [2], "total_draft_tokens": [8]},
    ]
    acc = from_perf_metrics(responses)
    assert (acc.num_draft_tokens, acc.num_accepted_tokens) == (28, 12)
    assert acc.acceptance_rate == pytest.approx(12 / 28)
    assert acc.mean_accepted_per_step is None  # no step count in the outputs
    assert "return_perf_metrics" in acc.source


def test_trtllm_return_perf_metrics_grpc_numpy_shape():
    """tensorrtllm_backend inflight_batcher_llm/client/inflight_batcher_llm_client.py reads
    result.as_numpy('total_draft_tokens') etc.: arrays of shape [1, 1] with the batch dimension."""
    np = pytest.importorskip("numpy")
    response = {"acceptance_rate": np.array([[0.75]], dtype=np.float32),
                "total_accepted_draft_tokens": np.array([[6]], dtype=np.int32),
                "total_draft_tokens": np.array([[8]], dtype=np.int32)}
    acc = from_perf_metrics([response], draft_tokens_per_step=4)
    assert (acc.num_drafts, acc.num_draft_tokens, acc.num_accepted_tokens) == (2, 8, 6)
    assert acc.mean_accepted_per_step == pytest.approx(4.0)
    with pytest.raises(ValueError, match="return_perf_metrics"):
        from_perf_metrics([{"text_output": "no metrics"}])


# TensorRT-LLM tests/unittest/_torch/speculative/test_eagle3.py::test_eagle3_spec_decoding_stats
# (stats from llm.get_stats() with enable_iter_perf_stats=True: a list of per-iteration dicts whose
# specDecodingStats has numDraftTokens, numAcceptedTokens, numRequestsWithDraftTokens,
# acceptanceLength, iterLatencyMS, draftOverhead) and cpp/include/tensorrt_llm/executor/types.h
# struct SpecDecodingStats; trtllm-serve's GET /metrics returns the same list
# (https://nvidia.github.io/TensorRT-LLM/commands/trtllm-serve.html, "Metrics Endpoint").
ITERATIONS = [
    {"iter": 1, "iterLatencyMS": 50.0, "numActiveRequests": 1, "gpuMemUsage": 1, "specDecodingStats": {
        "numDraftTokens": 0, "numAcceptedTokens": 0, "numRequestsWithDraftTokens": 0, "acceptanceLength": 0.0,
        "iterLatencyMS": 0.0, "draftOverhead": 0.0}},
    {"iter": 2, "iterLatencyMS": 20.0, "numActiveRequests": 1, "specDecodingStats": {
        "numDraftTokens": 3, "numAcceptedTokens": 2, "numRequestsWithDraftTokens": 1, "acceptanceLength": 3.0,
        "iterLatencyMS": 4.0, "draftOverhead": 0.2}},
    {"iter": 3, "iterLatencyMS": 20.0, "numActiveRequests": 1, "specDecodingStats": {
        "numDraftTokens": 3, "numAcceptedTokens": 1, "numRequestsWithDraftTokens": 1, "acceptanceLength": 2.0,
        "iterLatencyMS": 4.0, "draftOverhead": 0.2}},
    {"iter": 4, "iterLatencyMS": 10.0, "numActiveRequests": 0},
]


def test_trtllm_serve_iteration_stats():
    acc = from_iteration_stats(ITERATIONS)
    assert (acc.num_drafts, acc.num_draft_tokens, acc.num_accepted_tokens) == (2, 6, 3)
    assert acc.acceptance_rate == pytest.approx(0.5)
    # matches the mean of acceptanceLength over the speculative iterations (one request each)
    assert acc.mean_accepted_per_step == pytest.approx((3.0 + 2.0) / 2)
    assert "specDecodingStats" in acc.source


def test_trtllm_serve_iteration_stats_as_strings_and_drained_batches():
    body = json.dumps([json.dumps(e) for e in ITERATIONS[:2]])  # entries may arrive JSON-encoded
    total = accumulate(None, body)
    total = accumulate(total, ITERATIONS[2:])
    assert (total.num_drafts, total.num_draft_tokens, total.num_accepted_tokens) == (2, 6, 3)
    assert from_iteration_stats([]).acceptance_rate is None


VLLM_METRICS = """\
# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.
# TYPE vllm:spec_decode_num_drafts_total counter
vllm:spec_decode_num_drafts_total{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 100.0
# HELP vllm:spec_decode_num_draft_tokens_total Number of draft tokens.
# TYPE vllm:spec_decode_num_draft_tokens_total counter
vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 300.0
# HELP vllm:spec_decode_num_accepted_tokens_total Number of accepted tokens.
# TYPE vllm:spec_decode_num_accepted_tokens_total counter
vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 150.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct",position="0"} 80.0
vllm:spec_decode_num_drafts_total{engine="0",model_name="other"} 7.0
"""


def test_vllm_spec_decode_prometheus_counters():
    """vLLM V1 spec-decode counters (vllm-project/vllm PR #15151, "[V1][Metrics] Initial speculative
    decoding metrics"; names as exported on /metrics with the Prometheus `_total` suffix)."""
    acc = from_vllm_metrics(VLLM_METRICS, model="meta-llama/Llama-3.1-8B-Instruct")
    assert (acc.num_drafts, acc.num_draft_tokens, acc.num_accepted_tokens) == (100, 300, 150)
    assert acc.mean_accepted_per_step == pytest.approx(2.5) and acc.acceptance_rate == pytest.approx(0.5)
    assert from_vllm_metrics(VLLM_METRICS).num_drafts == 107
    assert "vllm:spec_decode" in acc.source
