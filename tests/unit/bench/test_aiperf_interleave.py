"""Whose answers are whose in an interleaved AIPerf run (credit_records): each variant gets the records its own
server answered, and a run where a server answered one prompt twice is an error even when the counts add up.
The jobs are stand-ins carrying only what crediting reads (a model name, the measured request count)."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from specops.bench.aiperf_interleave import credit_records
from specops.bench.tool import BenchToolError

PROMPTS = ["def add(a, b):", "def fib(n):", "def sort(xs):"]
ARTIFACTS = Path("/artifacts/run/aiperf")


def fake_job(model: str) -> SimpleNamespace:
    return SimpleNamespace(target=SimpleNamespace(model=model), requests=len(PROMPTS))


def record(request_id: str, prompt: int) -> dict:
    return {"metadata": {"x_request_id": request_id}, "prompt_text": PROMPTS[prompt]}


def credited(answers: list[tuple[str, int]]) -> list[list[dict]]:
    """credit_records over one record per (model, prompt) answer, in the order given."""
    records = [record(f"r{i}", prompt) for i, (_, prompt) in enumerate(answers)]
    answered = {f"r{i}": model for i, (model, _) in enumerate(answers)}
    return credit_records([fake_job("base"), fake_job("speculative")], records, answered,
                          lambda text: PROMPTS.index(text) if text in PROMPTS else None, ARTIFACTS)


def test_each_variant_is_credited_with_the_records_its_server_answered():
    answers = [("speculative", 0), ("base", 0), ("base", 1), ("speculative", 1), ("speculative", 2), ("base", 2)]
    base, spec = credited(answers)
    ids = {model: [f"r{i}" for i, (m, _) in enumerate(answers) if m == model] for model in ("base", "speculative")}
    assert [r["metadata"]["x_request_id"] for r in base] == ids["base"]
    assert [r["metadata"]["x_request_id"] for r in spec] == ids["speculative"]


def test_a_server_that_answered_one_prompt_twice_is_an_error_even_when_the_counts_match():
    # both servers answered prompt 0 twice and prompt 2 never: three answers each, the same prompts each
    answers = [(model, prompt) for prompt in (0, 0, 1) for model in ("base", "speculative")]
    with pytest.raises(BenchToolError, match="each prompt once"):
        credited(answers)
