"""Speculative-decoding methods: one config model per method, told apart by `kind`.

A method says *what* speculation to do; each backend says how it expresses the methods it
supports (see specops.backends). The `method` section of a profile is one of these models.
"""
from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from specops.fields import Count, Real


class MethodConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: str
    # Whether the method needs a `draft` section (a draft model or trained heads).
    needs_draft: ClassVar[bool] = False
    summary: ClassVar[str] = ""
    # The engine proposer `specops replay` runs for it offline (specops/replay/grid.py REPLAYS holds its settings,
    # specops/replay/worker.py PROPOSERS the proposer; a test holds the three equal); None: it has no replay.
    replay: ClassVar[str | None] = None

    @property
    def speculative(self) -> bool:
        return self.kind != "none"

    def draft_length(self) -> int:
        return int(getattr(self, "num_speculative_tokens", 0))

    def cross_request_cache(self) -> int | None:
        """Requests whose outputs the drafter keeps for later ones (0: off); None: it keeps none by design."""
        return None


class NoSpeculation(MethodConfig):
    """Plain decoding; also the implied base variant of every profile."""

    kind: Literal["none"] = "none"
    summary: ClassVar[str] = "no speculation (the base model)"


class NgramMethod(MethodConfig):
    """Prompt lookup: drafts are copied from an earlier occurrence of the last n tokens."""

    # The engines' own limits, which these bounds keep within (the upper bounds, 16 and 64, are specops' own: the
    # engines have none). vLLM 0.32.0, vllm/config/speculative.py: SpeculativeConfig fields prompt_lookup_min and
    # prompt_lookup_max are Field(ge=1); SpeculativeConfig.__post_init__ raises "prompt_lookup_min=... must be <=
    # prompt_lookup_max=..." (an unset one takes the other's value, both unset 5); SpeculativeConfig._verify_args
    # raises on num_speculative_tokens <= 0. The embedded runtime, specops/runtime/proposers.py
    # NgramProposer.Options.__post_init__: each an integer >= 1, min <= max, an unset min 2 (refused at load by
    # backends/local/config.py _check_options). The sweep's knobs (specops/sweep/grid.py knob_values) and the flow
    # form (prefect_adapters/parameters.py MAX_LOOKUP) read these bounds.
    kind: Literal["ngram"] = "ngram"
    summary: ClassVar[str] = "prompt lookup (n-gram) drafts, no draft model"
    replay: ClassVar[str | None] = "vLLM's n-gram matcher"
    num_speculative_tokens: Count = Field(4, ge=1, le=64, description="max draft tokens per step")
    prompt_lookup_min: Count | None = Field(
        None, ge=1, le=16, description="shortest n-gram matched; default: the backend's own (2 on the embedded "
                                       "runtime, where 1-token matches measured a net loss on CPU)")
    prompt_lookup_max: Count = Field(3, ge=1, le=16, description="longest n-gram matched")

    @model_validator(mode="after")
    def _ordered(self) -> NgramMethod:
        if self.prompt_lookup_min is not None and self.prompt_lookup_min > self.prompt_lookup_max:
            raise ValueError(
                f"prompt_lookup_min ({self.prompt_lookup_min}) must not exceed "
                f"prompt_lookup_max ({self.prompt_lookup_max})"
            )
        return self


class SuffixMethod(MethodConfig):
    """Suffix decoding (vLLM `method: suffix`, arctic-inference's suffix trees): drafts continue the longest
    suffix match in the request's prompt and output and, with the cache on, in earlier requests' outputs.
    Bounds are those vLLM validates (vllm/config/speculative.py _validate_suffix_decoding, vLLM 0.32.0)."""

    kind: Literal["suffix"] = "suffix"
    summary: ClassVar[str] = "suffix decoding: drafts from suffix trees of the prompt and outputs, no draft model"
    replay: ClassVar[str | None] = "arctic-inference's suffix trees"
    num_speculative_tokens: Count = Field(24, ge=1, le=64, description="max draft tokens per step (vLLM's own "
                                          "default is max_tree_depth)")
    max_tree_depth: Count = Field(24, ge=1, le=64, description="deepest suffix tree: prefix match plus draft")
    max_cached_requests: Count = Field(
        0, ge=0, le=1_000_000, description="requests kept in the cross-request suffix tree (FIFO); 0 (the default) "
        "turns it off, so a run measures what a user sees, not outputs replayed from earlier requests (vLLM's own "
        "default is 10000)")
    max_spec_factor: Real = Field(1.0, ge=0, le=64, description="draft at most this times the prefix match length")
    min_token_prob: Real = Field(0.1, ge=0, le=1, description="draft only tokens at least this likely "
                                                             "(frequency in the trees)")

    def cross_request_cache(self) -> int | None:
        return self.max_cached_requests

    def engine_settings(self) -> dict[str, int | float]:
        """The knobs as vLLM's SpeculativeConfig names them."""
        return {f"suffix_decoding_{k}": getattr(self, k)
                for k in ("max_tree_depth", "max_cached_requests", "max_spec_factor", "min_token_prob")}


class DraftTargetMethod(MethodConfig):
    """A smaller draft model with the target's tokenizer proposes tokens."""

    kind: Literal["draft-target"] = "draft-target"
    needs_draft: ClassVar[bool] = True
    summary: ClassVar[str] = "a small draft model proposes, the target verifies"
    num_speculative_tokens: Count = Field(5, ge=1, le=64, description="draft tokens proposed per step")


class EagleMethod(MethodConfig):
    """EAGLE-1 feature-level draft head."""

    kind: Literal["eagle"] = "eagle"
    needs_draft: ClassVar[bool] = True
    summary: ClassVar[str] = "EAGLE draft head on the target's features"
    num_speculative_tokens: Count = Field(5, ge=1, le=64, description="draft tokens proposed per step")


class Eagle3Method(MethodConfig):
    """EAGLE-3 draft head fed with several of the target's hidden layers."""

    kind: Literal["eagle3"] = "eagle3"
    needs_draft: ClassVar[bool] = True
    summary: ClassVar[str] = "EAGLE-3 draft head on multi-layer features"
    num_speculative_tokens: Count = Field(5, ge=1, le=64, description="draft tokens proposed per step")


class MedusaMethod(MethodConfig):
    """Medusa: extra decoding heads, one per future position."""

    kind: Literal["medusa"] = "medusa"
    needs_draft: ClassVar[bool] = True
    summary: ClassVar[str] = "Medusa heads, one per future position"
    num_speculative_tokens: Count = Field(4, ge=1, le=64, description="number of Medusa heads used")
    medusa_choices: list[list[Count]] | None = Field(None, description="the Medusa tree: each path a list of head "
                                                     "choices (TensorRT-LLM engines only); none: one chain")


ALL_METHODS: tuple[type[MethodConfig], ...] = (
    NoSpeculation,
    NgramMethod,
    SuffixMethod,
    DraftTargetMethod,
    EagleMethod,
    Eagle3Method,
    MedusaMethod,
)


def swept_methods() -> list[str]:
    """Methods whose config has a draft length (num_speculative_tokens): what a sweep over K can vary."""
    return sorted(m.model_fields["kind"].default for m in ALL_METHODS if "num_speculative_tokens" in m.model_fields)
