"""What a run's workload was, and the answer per category: each category's speedup with its interval, its measured
acceptance beside the replay's prediction, and the weights of the overall figure.

A request is credited to its prompt's category by the prompt's place in the run's prompt list (`prompt_categories`,
kept in the record), so a category's pairs are exactly its prompts' pairs, on both variants.
"""
from __future__ import annotations

from pydantic import Field

from specops.results.metrics import Record, RequestSample
from specops.results.paired import LEVEL, Design, Speedup
from specops.results.speedup import paired_speedup


class CategoryFigures(Record):
    category: str
    prompts: int  # measured prompts of the category
    weight: float  # its share of the overall figure (the mix, normalized)
    speedup: Speedup | None = None
    # 1 + accepted draft tokens / steps with a draft, over the category's speculative requests (the engine's
    # per-request counts); None where the engine gave none
    accepted_per_step: float | None = None
    predicted_accepted_per_step: float | None = None  # the replay's, over the same prompts

    def verdict(self) -> str:
        """`faster`, `slower` or `cannot tell` (its interval reaches 1.00x, or it has none)."""
        s = self.speedup
        if s is None or not s.has_interval:
            return "cannot tell"
        return "faster" if s.low > 1.0 else "slower" if s.high < 1.0 else "cannot tell"  # type: ignore[operator]


class WorkloadRecord(Record):
    """The prompts a run measured and how it sent them; per category where its prompts name categories."""

    label: str  # the source with its provenance (a named workload's pin, or the file's sha256)
    api: str  # "chat" (the server applied the target's chat template) or "completions" (raw text)
    api_note: str  # why that API
    seed: int | None = None  # of the per-category sampling; None: the file's prompts in order
    prompt_categories: list[str | None] = []  # each prompt's category, by its index in the run's prompt list
    mix: dict[str, float] = {}  # the overall figure's weights, normalized; {}: no categories
    mix_note: str = ""  # where the weights came from
    categories: list[CategoryFigures] = Field(default_factory=list)

    def mix_text(self) -> str:
        return f"over {len(self.mix)} categories, {self.mix_note}" if self.mix else ""


def normalized_mix(asked: dict[str, float], measured: list[str]) -> tuple[dict[str, float], str]:
    """The weights of the measured categories: benchmark.mix's (normalized), else equal."""
    if not measured:
        return {}, ""
    total = sum(asked.get(c, 0.0) for c in measured)
    if asked and total > 0:  # a category the mix leaves out weighs nothing: it is no part of the overall figure
        mix = {c: asked[c] / total for c in measured if asked.get(c, 0.0) > 0}
        return mix, "weighted by benchmark.mix (" + ", ".join(f"{c} {w:.0%}" for c, w in mix.items()) + ")"
    why = "benchmark.mix names none of the categories measured" if asked else "benchmark.mix unset"
    return {c: 1 / len(measured) for c in measured}, f"weighted equally ({why})"


def measured_acceptance(samples: list[RequestSample]) -> float | None:
    steps = sum(s.spec_steps or 0 for s in samples)
    if not steps or any(s.spec_steps is None for s in samples):
        return None
    return 1 + sum(s.accepted_tokens or 0 for s in samples) / steps


def category_figures(spec: list[RequestSample], base: list[RequestSample], categories: list[str | None],
                     mix: dict[str, float], design: Design, predicted: dict[str, float] | None = None,
                     level: float = LEVEL) -> list[CategoryFigures]:
    """Each measured category's figures: its own prompts' pairs only."""
    out = []
    for category, weight in mix.items():
        mine = {i for i, c in enumerate(categories) if c == category}
        spec_c, base_c = [s for s in spec if s.prompt in mine], [s for s in base if s.prompt in mine]
        out.append(CategoryFigures(
            category=category, prompts=len({s.prompt for s in spec_c} & {s.prompt for s in base_c}), weight=weight,
            speedup=paired_speedup(spec_c, base_c, design=design, level=level),
            accepted_per_step=measured_acceptance(spec_c),
            predicted_accepted_per_step=(predicted or {}).get(category)))
    return out


def prompt_mix(categories: list[str | None], mix: dict[str, float]) -> dict[int, tuple[str, float]]:
    """The overall figure's weights by prompt index (paired_speedup's `mix`)."""
    return {i: (c, mix[c]) for i, c in enumerate(categories) if c in mix}
