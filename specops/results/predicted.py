"""`specops replay`'s prediction for a run's own setting, kept in its record beside what the engine counted."""
from __future__ import annotations

from specops.results.metrics import Record
from specops.results.paired import Speedup


class Predicted(Record):
    """`specops replay`'s figures for the run's own setting (the engine's proposer over the target's greedy outputs
    on the benchmark's prompts), beside what the served engine counted: they agree up to batching effects."""

    setting: str  # the setting's label, e.g. "ngram min 4 max 4 K 4"
    accepted_per_step: float | None  # 1 + accepted / steps with a draft (the engine counter's definition); None: none
    tokens_per_step: float  # what one target forward emits, steps without a draft included
    source: str  # the proposer, the engine version and what was replayed
    by_category: dict[str, float] = {}  # accepted_per_step over each category's prompts (schema >= 9)
    # The speedup the replay predicts with this host's step cost measured before the run (replay.step_cost), with its
    # interval over the prompts, overall and per category; None: no cost measured yet (`cost` says so)
    speedup: Speedup | None = None
    category_speedups: dict[str, Speedup] = {}
    cost: str | None = None
    # each prompt's replay (steps, drafted steps, drafted): what prices the setting at another load's step cost
    prompt_counts: list[dict[str, int]] = []
