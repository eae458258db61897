"""Acceptance parsers on response shapes written down from the upstream sources named per test."""
from __future__ import annotations

import json
import re
from types import SimpleNamespace

import pytest

from specops.acceptance import from_iteration_stats, from_perf_metrics, from_vllm_log
from specops.acceptance.trtllm_iter_stats import accumulate
from specops.versions.store import load


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


def test_trtllm_steps_are_drafted_tokens_over_k_unrounded():
    """10 tokens drafted at K=4 are 2.5 steps' worth, not 2: a rounded-down count grows accepted/step (1 + 6/2 = 4.0
    where the counts say 1 + 6/2.5 = 3.4)."""
    responses = [{"total_accepted_draft_tokens": "4", "total_draft_tokens": "8"},
                 {"total_accepted_draft_tokens": "2", "total_draft_tokens": "2"}]
    acc = from_perf_metrics(responses, draft_tokens_per_step=4)
    assert (acc.num_drafts, acc.num_draft_tokens, acc.num_accepted_tokens) == (2.5, 10, 6)
    assert acc.mean_accepted_per_step == pytest.approx(3.4)


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


# vLLM's spec-decode log formats, as vLLM's sources define them at each release
# (specops/versions/data/vllm.yaml spec_decode_log.formats, read from the PyPI archives), rendered with
# known counts: 500 verification steps of 5 drafted tokens each, 1500 accepted.
STEPS, K, ACCEPTED = 500, 5, 1500
DRAFTED = STEPS * K
# What each label's placeholder takes in the V1 %-formats.
V1_VALUES = {"Draft acceptance rate: ": 100 * ACCEPTED / DRAFTED, "Mean acceptance length: ": 1 + ACCEPTED / STEPS,
             "Accepted throughput: ": 150.0, "Drafted throughput: ": 250.0, "Accepted: ": ACCEPTED,
             "Drafted: ": DRAFTED, "Per-position acceptance rate: ": "0.800, 0.650, 0.500, 0.400, 0.350",
             "Avg Draft acceptance rate: ": 100 * ACCEPTED / DRAFTED}
PREFIX = "INFO 11-23 12:00:00 [metrics.py:97] "


def vllm_formats() -> dict[str, dict]:
    formats = {}
    for row in load("vllm")["versions"].values():
        for fmt in row["spec_decode_log"]["formats"]:
            if fmt["format"].startswith(("Speculative metrics", "SpecDecoding metrics")):
                formats.setdefault(fmt["format"], fmt)
    return formats


def render_v1(fmt: str, scale: float = 1.0) -> str:
    """Fill a V1 %-format: each placeholder takes the value of the label before it."""
    labels = re.findall(r"([A-Z][A-Za-z -]+: )%", fmt)
    values = [V1_VALUES[label] * (scale if label in ("Accepted: ", "Drafted: ") else 1)
              if not isinstance(V1_VALUES[label], str) else V1_VALUES[label] for label in labels]
    return fmt % tuple(values)


@pytest.mark.parametrize("fmt", list(vllm_formats()), ids=lambda f: f[:40])
def test_vllm_log_formats_parse_into_the_counts_they_carry(fmt):
    if fmt.startswith("Speculative metrics"):  # V0 (str.format with a SpecDecodeWorkerMetrics)
        metrics = SimpleNamespace(draft_acceptance_rate=ACCEPTED / DRAFTED, system_efficiency=0.7,
                                  num_spec_tokens=K, accepted_tokens=ACCEPTED, draft_tokens=DRAFTED,
                                  emitted_tokens=ACCEPTED + STEPS)
        early = SimpleNamespace(**{**vars(metrics), "accepted_tokens": 3, "draft_tokens": 5, "emitted_tokens": 4})
        text = f"{PREFIX}{fmt.format(metrics=early)}\nnoise\n{PREFIX}{fmt.format(metrics=metrics)}\n"
        acc = from_vllm_log(text)  # cumulative counters: the last line holds them
        assert (acc.num_drafts, acc.num_draft_tokens, acc.num_accepted_tokens) == (STEPS, DRAFTED, ACCEPTED)
        assert acc.num_emitted_tokens == ACCEPTED + STEPS and "V0" in acc.source
        return
    text = f"{PREFIX}{render_v1(fmt, 0.5)}\n{PREFIX}{render_v1(fmt, 0.5)}\n"  # per-interval lines add up
    acc = from_vllm_log(text)
    assert (acc.num_draft_tokens, acc.num_accepted_tokens) == (DRAFTED, ACCEPTED)
    assert acc.acceptance_rate == pytest.approx(ACCEPTED / DRAFTED)
    if "Mean acceptance length" in fmt:
        assert acc.num_drafts == STEPS and acc.mean_accepted_per_step == pytest.approx(1 + ACCEPTED / STEPS)
    else:  # 0.8.4 logs no mean length: the step count cannot be recovered
        assert acc.num_drafts == 0 and acc.mean_accepted_per_step is None
    assert "V1" in acc.source


def test_vllm_samples_written_with_the_data_parse():
    for fmt in vllm_formats().values():
        acc = from_vllm_log(PREFIX + fmt["sample"])
        assert acc is not None and acc.num_draft_tokens > 0, fmt["where"]


def test_vllm_log_without_spec_lines_has_no_acceptance():
    assert from_vllm_log("INFO 11-23 12:00:00 engine started\nAvg prompt throughput: 1.0 tokens/s\n") is None


def test_vllm_v0_window_is_the_difference_of_two_readings():
    fmt = next(f for f in vllm_formats() if f.startswith("Speculative metrics"))
    line = lambda a, d: PREFIX + fmt.format(metrics=SimpleNamespace(  # noqa: E731
        draft_acceptance_rate=a / d, system_efficiency=0.5, num_spec_tokens=K, accepted_tokens=a, draft_tokens=d,
        emitted_tokens=a + d // K))
    before = from_vllm_log(line(30, 50))
    after = from_vllm_log(line(30, 50) + "\n" + line(1530, 2550))
    window = after.since(before)
    assert (window.num_drafts, window.num_draft_tokens, window.num_accepted_tokens) == (STEPS, DRAFTED, ACCEPTED)
