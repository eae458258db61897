"""The settings a replay predicts, and its ranking of them.

Knob ranges are the engine's own: vLLM 0.32's SpeculativeConfig (vllm/config/speculative.py: prompt_lookup_min <=
prompt_lookup_max, both >= 1; suffix_decoding_max_tree_depth 24, _max_spec_factor 1.0, _min_token_prob 0.1,
_max_cached_requests 10000 by default, and num_speculative_tokens defaulting to the tree depth for suffix).
"""
from __future__ import annotations

import itertools
import statistics
import textwrap
from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from specops.methods import METHODS
from specops.methods.specs import NgramMethod, SuffixMethod
from specops.results.figures import interval_text, shown
from specops.results.history import text_table
from specops.results.paired import Speedup

SUFFIX_CACHED = 10000  # vLLM's suffix_decoding_max_cached_requests default: the cross-request cache on
NOTE = ("tokens/step counts what one target forward emits (accepted drafts + its own token), steps without a draft "
        "included. The predicted speedup weighs each prompt's steps by the step cost this host's served runs "
        "measured (a step with a draft costs more, and more with each token it verifies; replay.step_cost), its "
        "interval over the prompts; '-' where none was measured. vLLM's counters (accepted/step in a run's "
        "report) divide by steps that carried a draft only: the 'per drafted step' column.")


class NgramSetting(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    method: Literal["ngram"] = "ngram"
    min: int = Field(ge=1, description="prompt_lookup_min")
    max: int = Field(ge=1, description="prompt_lookup_max")
    k: int = Field(ge=1, le=64, description="num_speculative_tokens")

    @classmethod
    def of(cls, m: NgramMethod) -> NgramSetting:
        """The profile's method as vLLM serves it (prompt_lookup_min unset: vLLM sets it to the max)."""
        return cls(min=m.prompt_lookup_min or m.prompt_lookup_max, max=m.prompt_lookup_max, k=m.num_speculative_tokens)

    def label(self) -> str:
        return f"ngram min {self.min} max {self.max} K {self.k}"

    def overrides(self) -> list[str]:
        """The profile fields that serve this setting (replay.run.profile_setting reads them back)."""
        return [f"method.prompt_lookup_min={self.min}", f"method.prompt_lookup_max={self.max}",
                f"method.num_speculative_tokens={self.k}"]


class SuffixSetting(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    method: Literal["suffix"] = "suffix"
    depth: int = Field(24, ge=1, description="suffix_decoding_max_tree_depth")
    factor: float = Field(1.0, ge=0, description="suffix_decoding_max_spec_factor")
    min_prob: float = Field(0.1, ge=0, le=1, description="suffix_decoding_min_token_prob")
    cached: int = Field(0, ge=0, description="suffix_decoding_max_cached_requests (0: no cross-request cache)")
    k: int = Field(24, ge=1, description="num_speculative_tokens (vLLM's default: the tree depth)")

    @classmethod
    def of(cls, m: SuffixMethod) -> SuffixSetting:
        return cls(depth=m.max_tree_depth, factor=m.max_spec_factor, min_prob=m.min_token_prob,
                   cached=m.max_cached_requests, k=m.num_speculative_tokens)

    def label(self) -> str:
        cache = "on" if self.cached else "off"
        return (f"suffix depth {self.depth} factor {self.factor:g} prob {self.min_prob:g} K {self.k} "
                f"cache {cache}")

    def overrides(self) -> list[str]:
        return [f"method.max_tree_depth={self.depth}", f"method.max_spec_factor={self.factor}",
                f"method.min_token_prob={self.min_prob}", f"method.max_cached_requests={self.cached}",
                f"method.num_speculative_tokens={self.k}"]


Setting = NgramSetting | SuffixSetting


def ngram_grid() -> list[NgramSetting]:
    pairs = [(lo, hi) for lo, hi in itertools.product(range(1, 6), repeat=2) if lo <= hi]
    return [NgramSetting(min=lo, max=hi, k=k) for (lo, hi), k in itertools.product(pairs, (1, 2, 3, 4, 5, 6, 8))]


def suffix_grid() -> list[SuffixSetting]:
    return [SuffixSetting(depth=depth, factor=factor, min_prob=prob, k=k, cached=cached)
            for depth, factor, prob, cached in itertools.product((24, 64), (1.0, 2.0), (0.1, 0.3), (0, SUFFIX_CACHED))
            for k in sorted({8, depth})]


# The replay of each method whose spec names one (MethodConfig.replay): its setting type and the grid it ranks.
REPLAYS: dict[str, tuple[type[NgramSetting] | type[SuffixSetting], Callable[[], list]]] = {
    "ngram": (NgramSetting, ngram_grid), "suffix": (SuffixSetting, suffix_grid)}
GRIDS = {kind: grid for kind, (_, grid) in REPLAYS.items()} | {
    "all": lambda: [s for _, grid in REPLAYS.values() for s in grid()]}


def replayable() -> list[str]:
    """The methods `specops replay` replays, as their specs say."""
    return [kind for kind in METHODS.names() if METHODS.get(kind).replay]


class Prediction(BaseModel):
    """One setting's replay over the profile's prompts, summed over them, with the spread across prompts."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    setting: NgramSetting | SuffixSetting = Field(discriminator="method")
    label: str
    tokens_per_step: float
    per_drafted_step: float | None  # 1 + accepted / steps with a draft: vLLM's accepted/step counter
    acceptance_rate: float | None
    prompt_tokens_per_step: list[float]  # one per prompt, in the prompts' order
    steps: int
    by_category: dict[str, float | None] = {}  # per drafted step over each category's prompts
    prompt_counts: list[dict[str, int]] = []  # each prompt's replay (steps, drafted steps, drafted, accepted, ...)
    # With a measured step cost (replay.step_cost): the speedup it predicts, with its interval over the prompts,
    # overall and per category; None: no cost measured for this engine, target and host
    speedup: Speedup | None = None
    category_speedups: dict[str, Speedup] = {}

    @classmethod
    def of(cls, setting: Setting, counts: list[dict], categories: list[str | None] | None = None) -> Prediction:
        total = _totals(counts)
        named = list(dict.fromkeys(c for c in categories or [] if c is not None))
        return cls(setting=setting, label=setting.label(), steps=total["steps"],
                   tokens_per_step=_ratio(total["emitted"], total["steps"]) or 0.0,
                   per_drafted_step=_per_drafted_step(total),
                   acceptance_rate=_ratio(total["accepted"], total["drafted"]),
                   prompt_tokens_per_step=[_ratio(c["emitted"], c["steps"]) or 0.0 for c in counts],
                   prompt_counts=counts,
                   by_category={name: _per_drafted_step(_totals([c for c, k in zip(counts, categories or [])
                                                                  if k == name])) for name in named})


def _totals(counts: list[dict]) -> dict[str, int]:
    return {key: sum(c[key] for c in counts) for key in counts[0]}


def _per_drafted_step(total: dict[str, int]) -> float | None:
    """1 + accepted / steps that carried a draft: the engine counter's accepted/step (None: no step drafted)."""
    return 1 + total["accepted"] / total["drafted_steps"] if total["drafted_steps"] else None


def _ratio(a: float, b: float) -> float | None:
    return a / b if b else None


def ranked(predictions: list[Prediction]) -> list[Prediction]:
    """Best first: by predicted speedup where a step cost was measured (a setting that verifies far more than it
    keeps ranks below one that keeps more of what it verifies), else by tokens per step; of settings that predict
    the same, the one drafting fewer tokens per step first (it costs less to verify)."""
    return sorted(predictions, key=lambda p: (-round(p.speedup.point if p.speedup else 0.0, 6),
                                              -round(p.tokens_per_step, 6), p.setting.k))


def pruned(predictions: list[Prediction]) -> tuple[list[Prediction], list[str]]:
    """The settings whose predicted interval reaches the best one's, and why each other is left out (its interval
    lies wholly below the best's); without predicted speedups, all of them."""
    order = ranked(predictions)
    best = order[0].speedup if order else None
    if best is None or best.low is None:
        return order, []
    kept = [p for p in order if p.speedup is None or p.speedup.high is None or p.speedup.high >= best.low]
    why = [f"{p.label}: predicted {p.speedup.text()}, below the best's lower end {best.low:.2f}x"
           for p in order if p not in kept]
    return kept, why


def category_table(predictions: list[Prediction], top: int | None, marked: Setting | None = None) -> str:
    """Accepted tokens per drafted step of the best settings (and the profile's own) in each category: how much the
    same setting is worth on each kind of request."""
    order = ranked(predictions)
    chosen = order[:top or 5] + [p for p in order[top or 5:] if p.setting == marked]
    names = list(chosen[0].by_category)
    rows = [[p.label + (" (profile)" if p.setting == marked else ""),
             *(shown(p.by_category.get(c), ".2f") for c in names)] for p in chosen]
    return ("accepted tokens per drafted step, by category:\n"
            + text_table(["setting", *names], rows))


def ranking_table(predictions: list[Prediction], top: int | None, marked: Setting | None = None) -> str:
    """The settings best first (the profile's own too when it is not among the top N); each prompt's tokens/step as
    min / median / max, so a looping prompt shows."""
    order = ranked(predictions)
    shown_ones = order[:top] + [p for p in order[top or len(order):] if p.setting == marked]
    rows = []
    for p in shown_ones:
        spread, s = p.prompt_tokens_per_step, p.speedup
        rows.append([p.label + (" (profile)" if p.setting == marked else ""),
                     interval_text(s.point, s.low, s.high) if s else "-", f"{p.tokens_per_step:.2f}",
                     shown(p.per_drafted_step, ".2f"), shown(p.acceptance_rate, ".0%"),
                     f"{min(spread):.2f} / {statistics.median(spread):.2f} / {max(spread):.2f}"])
    headers = ["setting", "predicted speedup (95%)", "tokens/step", "per drafted step", "acceptance",
               "per prompt min / median / max"]
    return text_table(headers, rows) + "\n\n" + textwrap.fill(NOTE, 116)

