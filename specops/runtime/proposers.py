"""Draft proposers: who guesses the next tokens that the target then verifies.

A proposer is built once per engine from the method's options and asked, before every
verification step, for up to `limit` draft tokens given everything decoded so far.
Per-request scratch (a draft model's KV cache, EAGLE's hidden states) lives in the object
returned by `start()`, never on the proposer, because one engine serves concurrent requests.
Drafts are deterministic (point-mass) proposals, which is what lets the engine verify them
losslessly by sampling the target and accepting while it agrees.
"""
from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from specops.registry import Registry


class Proposer(ABC):
    """Base class: subclasses set `name`, an `Options` dataclass, and implement propose()."""

    name: ClassVar[str]

    @dataclasses.dataclass(frozen=True)
    class Options:
        pass

    def __init__(self, options: Options) -> None:
        self.options = options

    @classmethod
    def from_options(cls, raw: Mapping[str, Any] | None) -> Proposer:
        """Build from a plain dict, refusing keys the method does not know (typos)."""
        raw = dict(raw or {})
        known = {f.name for f in dataclasses.fields(cls.Options)}
        unknown = sorted(set(raw) - known)
        if unknown:
            raise ValueError(
                f"method {cls.name!r}: unknown option(s) {unknown}; known: {sorted(known)}"
            )
        return cls(cls.Options(**raw))

    # Whether observe() needs the target's hidden states (all layers) of verified positions.
    needs_hidden: ClassVar[bool] = False

    @property
    def max_draft(self) -> int:
        """Most tokens one proposal can hold: the options' num_speculative_tokens (0 without one: never drafts)."""
        return getattr(self.options, "num_speculative_tokens", 0)

    def bind(self, target, tokenizer) -> None:
        """Called once with the loaded target (embeddings, config), before any request."""

    def start(self, prompt_ids: Sequence[int]) -> Any:
        """Per-request state handed back to every propose() of that request."""
        return None

    def observe(self, state: Any, hidden: tuple | None, context_ids: Sequence[int]) -> None:
        """The target cached more positions: after prefill, and after every verification.

        `hidden` (when needs_hidden) is the target's per-layer hidden states of the newly
        cached positions, which end just before the last token of `context_ids`.
        """

    @abstractmethod
    def propose(self, context_ids: Sequence[int], limit: int, state: Any) -> list[int]:
        """Up to `limit` draft tokens that would follow `context_ids` (prompt + output)."""


@dataclasses.dataclass(frozen=True)
class DraftOptions:
    """Options of a proposer drafting from a trained checkpoint: each names its method (`label`) and what
    `draft_dir` holds (`checkpoint`) in errors, and may add fields."""

    label: ClassVar[str] = "draft"
    checkpoint: ClassVar[str] = "the draft checkpoint"
    draft_dir: str = ""
    num_speculative_tokens: int = 3

    def __post_init__(self) -> None:
        if not self.draft_dir:
            raise ValueError(f"{self.label}: draft_dir ({self.checkpoint}) is required")
        if not isinstance(self.num_speculative_tokens, int) or self.num_speculative_tokens < 1:
            raise ValueError(f"{self.label}: num_speculative_tokens must be an integer >= 1, "
                             f"got {self.num_speculative_tokens!r}")


# Proposers that load torch modules of their own live in their own modules, imported on use.
PROPOSERS: Registry[type[Proposer]] = Registry("speculative method")
for _name, _entry in {"eagle3": "eagle_proposer:EagleProposer", "eagle": "eagle_proposer:Eagle1Proposer",
                      "medusa": "medusa_proposer:MedusaProposer",
                      "draft-target": "draft_proposer:DraftModelProposer"}.items():
    PROPOSERS.register(_name, f"specops.runtime.{_entry}")


def register(cls: type[Proposer]) -> type[Proposer]:
    PROPOSERS.register(cls.name, cls)
    return cls


def make_proposer(method: str, options: Mapping[str, Any] | None = None) -> Proposer:
    """Raises UnknownName (listing the known methods) for a method nobody registered."""
    return PROPOSERS.get(method).from_options(options)


@register
class NoProposer(Proposer):
    """Plain decoding: one target token per step."""

    name = "none"

    def propose(self, context_ids: Sequence[int], limit: int, state: Any) -> list[int]:
        return []


@register
class NgramProposer(Proposer):
    """Prompt lookup: copy what followed the latest earlier occurrence of the last n tokens.

    Defaults: 4 drafts and n from 3 down to 2. vLLM leaves both bounds at 5 when unset
    ("arbitrarily chosen", its own TODO); on a CPU a rejected draft costs most of a decode
    step (verifying 4 tokens took ~1.8x the time of decoding 1 on a 2-core EPYC, measured once),
    so 1-gram matches, right much less often, are off by default; runtime_bench.py measures the
    alternatives.
    """

    name = "ngram"

    @dataclasses.dataclass(frozen=True)
    class Options:
        num_speculative_tokens: int = 4
        prompt_lookup_min: int = 2
        prompt_lookup_max: int = 3

        def __post_init__(self) -> None:
            for field in dataclasses.fields(self):
                value = getattr(self, field.name)
                if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                    raise ValueError(f"ngram: {field.name} must be an integer >= 1, got {value!r}")
            if self.prompt_lookup_min > self.prompt_lookup_max:
                raise ValueError(
                    f"ngram: prompt_lookup_min={self.prompt_lookup_min} > "
                    f"prompt_lookup_max={self.prompt_lookup_max}"
                )

    def propose(self, context_ids: Sequence[int], limit: int, state: Any) -> list[int]:
        k = min(self.options.num_speculative_tokens, limit)
        if k <= 0:
            return []
        ctx = list(context_ids)
        size = len(ctx)
        # Longest n first: a longer match predicts the continuation more reliably.
        for n in range(min(self.options.prompt_lookup_max, size - 1),
                       self.options.prompt_lookup_min - 1, -1):
            start = _latest_earlier_match(ctx, n)
            if start is not None:
                return ctx[start + n:start + n + k]
        return []


def _latest_earlier_match(ctx: list[int], n: int) -> int | None:
    """Start of the latest occurrence of ctx[-n:] that is followed by at least one token."""
    pattern = ctx[-n:]
    last = pattern[-1]
    for start in range(len(ctx) - n - 1, -1, -1):
        # Checking the last token first skips the slice for almost every position.
        if ctx[start + n - 1] == last and ctx[start:start + n] == pattern:
            return start
    return None
