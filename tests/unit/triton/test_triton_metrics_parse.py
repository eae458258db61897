"""Parsing our spec_decode_* series from the Prometheus text of the metrics port."""
from specops.triton.client import PER_POSITION, SPEC_COUNTERS, accepted_per_position, parse_metrics

TRITON_TEXT = """\
# HELP nv_inference_request_success Number of successful inference requests
# TYPE nv_inference_request_success counter
nv_inference_request_success{model="spec",version="1"} 3
# HELP spec_decode_num_drafts speculative decoding: spec_decode_num_drafts
# TYPE spec_decode_num_drafts counter
spec_decode_num_drafts{model="spec",version="1"} 5
spec_decode_num_drafts{model="base",version="1"} 2
spec_decode_num_draft_tokens{model="spec",version="1"} 20
spec_decode_num_accepted_tokens{model="spec",version="1"} 9
spec_decode_num_emitted_tokens{model="spec",version="1"} 14
spec_decode_num_accepted_tokens_per_pos{model="spec",position="2",version="1"} 1
spec_decode_num_accepted_tokens_per_pos{model="spec",position="0",version="1"} 5
spec_decode_num_accepted_tokens_per_pos{model="spec",position="1",version="1"} 3
"""


def test_counters_are_summed_over_labels():
    m = parse_metrics(TRITON_TEXT)
    assert m["spec_decode_num_drafts"] == 7
    assert m["spec_decode_num_draft_tokens"] == 20
    assert m["spec_decode_num_accepted_tokens"] == 9
    assert m["spec_decode_num_emitted_tokens"] == 14
    assert "nv_inference_request_success" not in m


def test_per_position_series():
    m = parse_metrics(TRITON_TEXT)
    assert m[f"{PER_POSITION}[1]"] == 3
    assert accepted_per_position(m) == [5, 3, 1]


def test_absent_counters_read_zero():
    m = parse_metrics("# nothing here\nnv_cpu_utilization 0.5\n")
    assert m == {name: 0.0 for name in SPEC_COUNTERS}
    assert accepted_per_position(m) == []


def test_vllm_spelling_parses_the_same():
    text = (
        'vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 4.0\n'
        'vllm:spec_decode_num_drafts_created{engine="0",model_name="m"} 1.78e9\n'
        'vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",position="0"} 3.0\n'
    )
    m = parse_metrics(text)
    assert m["spec_decode_num_drafts"] == 4
    assert accepted_per_position(m) == [3]


def test_one_model_can_be_selected():
    m = parse_metrics(TRITON_TEXT, model="base")
    assert m["spec_decode_num_drafts"] == 2 and m["spec_decode_num_draft_tokens"] == 0
    assert accepted_per_position(m) == []
