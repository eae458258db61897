"""The embedded CPU decoding engine: one target model, one proposer, a KV-cached decode loop.

Each step feeds the last accepted token plus the proposer's drafts through the target in
one forward pass, keeps the longest prefix the target agrees with plus the target's own
next token, and crops the KV cache back over whatever was rejected. Without drafts a step
is a plain one-token decode, so a method that finds nothing to propose costs nothing extra.
"""
from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import torch

from .draft_length import DraftLengthPolicy
from .proposers import Proposer, make_proposer
from .sampling import Sampler, SpecCounters, TextStream
from .verify_gemm import use_verify_gemm


class DecodingEngine:
    """Thread-safe for concurrent generate() calls: all per-request state is local."""

    def __init__(self, model, tokenizer, proposer: Proposer, method: str,
                 adaptive_draft_length: bool = False, relaxed_topk: int | None = None) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.proposer = proposer
        self.method = method
        self.counters = SpecCounters()
        # Adaptive: each step's draft length is chosen from measured costs and acceptance,
        # up to the method's num_speculative_tokens; fixed: always that many.
        self.policy = DraftLengthPolicy(proposer.max_draft) if adaptive_draft_length and proposer.max_draft else None
        # Lossy on purpose when set: a draft token among the target's top-k is kept even where the
        # target would have picked another, as relaxed-acceptance schemes do (outputs then differ
        # from plain decoding, and the lossless check must say so).
        if relaxed_topk is not None and relaxed_topk < 1:
            raise ValueError(f"relaxed_topk must be >= 1, got {relaxed_topk}")
        self.relaxed_topk = relaxed_topk if relaxed_topk and relaxed_topk > 1 else None
        self.eos_ids = _eos_ids(model)
        self.max_positions = getattr(model.config, "max_position_embeddings", None)

    @classmethod
    def load(
        cls,
        model_dir: Path,
        method: str,
        options: Mapping[str, Any] | None = None,
        threads: int = 1,
        adaptive_draft_length: bool = False,
        relaxed_topk: int | None = None,
    ) -> DecodingEngine:
        """Load an HF checkpoint in fp32 for CPU inference with the given speculation method."""
        from transformers import AutoModelForCausalLM, AutoTokenizer

        # Build the proposer first: a typo in the method or options fails before the slow load.
        proposer = make_proposer(method, options)
        # One thread measured fastest on 2 cores, and degrades least under a busy neighbour.
        torch.set_num_threads(threads)
        tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
        model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32)
        model.eval()
        use_verify_gemm(model)
        proposer.bind(model, tokenizer)
        return cls(model, tokenizer, proposer, method, adaptive_draft_length, relaxed_topk)

    # Counters, read one at a time; counters.snapshot() reads them all consistently.
    num_drafts = property(lambda self: self.counters.num_drafts)
    num_draft_tokens = property(lambda self: self.counters.num_draft_tokens)
    num_accepted_tokens = property(lambda self: self.counters.num_accepted_tokens)
    accepted_per_position = property(lambda self: list(self.counters.accepted_per_position))
    num_steps = property(lambda self: self.counters.num_steps)
    num_generated_tokens = property(lambda self: self.counters.num_generated_tokens)
    draft_seconds = property(lambda self: self.counters.draft_seconds)
    verify_seconds = property(lambda self: self.counters.verify_seconds)

    def generate(
        self,
        prompt: str,
        max_tokens: int,
        temperature: float = 0.0,
        top_p: float = 1.0,
        top_k: int = 0,
        seed: int | None = None,
        stop: list[str] | None = None,
        ignore_eos: bool = False,
    ) -> Iterator[str]:
        """Stream text deltas for a raw prompt (no chat template)."""
        sampler = Sampler(temperature, top_p, top_k, seed)
        stream = TextStream(self.tokenizer, stop)
        for out_ids, done in self._decode(self._encode(prompt), max_tokens, sampler, ignore_eos):
            delta = stream.push(out_ids, final=done)
            if delta:
                yield delta
            if stream.stopped:
                return

    def generate_ids(self, prompt_ids: Sequence[int], max_tokens: int,
                     ignore_eos: bool = False, **sampling: Any) -> list[int]:
        """Token ids of a whole completion: for exactness checks and benchmarks."""
        out: list[int] = []
        for so_far, _ in self._decode(list(prompt_ids), max_tokens, Sampler(**sampling), ignore_eos):
            out = so_far
        return list(out)

    def _encode(self, prompt: str) -> list[int]:
        # The tokenizer's defaults decide about BOS, as they do for vLLM's raw prompts.
        return list(self.tokenizer(prompt)["input_ids"])

    def _start_ids(self, prompt_ids: list[int]) -> list[int]:
        # A step needs at least one token to stand on; an empty prompt starts from BOS.
        if prompt_ids:
            return prompt_ids
        bos = self.model.config.bos_token_id
        if bos is None:
            raise ValueError("empty prompt and the model has no BOS token to start from")
        return [bos]

    def _budget(self, prompt_len: int, max_tokens: int) -> int:
        if max_tokens < 0:
            raise ValueError(f"max_tokens must be >= 0, got {max_tokens}")
        if self.max_positions is None:
            return max_tokens
        if prompt_len >= self.max_positions:
            raise ValueError(
                f"prompt has {prompt_len} tokens; the model holds {self.max_positions} positions"
            )
        return min(max_tokens, self.max_positions - prompt_len)

    def _decode(self, prompt_ids: list[int], max_tokens: int, sampler: Sampler,
                ignore_eos: bool) -> Iterator[tuple[list[int], bool]]:
        """Yield (all output ids so far, finished) after every step."""
        from transformers import DynamicCache

        prompt_ids = self._start_ids(prompt_ids)
        budget = self._budget(len(prompt_ids), max_tokens)
        if budget <= 0:
            yield [], True
            return
        context = list(prompt_ids)
        out: list[int] = []
        cache = DynamicCache(config=self.model.config)
        state = self.proposer.start(prompt_ids)
        # The cache always holds every context token but the last, which opens the next step.
        if len(context) > 1:
            hidden = self._prefill(context[:-1], cache)
            self.proposer.observe(state, hidden, context)
        while True:
            remaining = budget - len(out)
            # Drafting past the budget is wasted verification work: the bonus token fills it.
            limit = remaining - 1 if self.policy is None else min(remaining - 1, self.policy.choose())
            t0 = time.perf_counter()
            drafts = self.proposer.propose(context, limit, state)[:limit] if limit > 0 else []
            t1 = time.perf_counter()
            emitted, hidden = self._step(context, cache, drafts, sampler)
            t2 = time.perf_counter()
            accepted = len(emitted) - 1
            emitted, finished = self._truncate(emitted, remaining, ignore_eos)
            self.counters.record_step(len(drafts), accepted, len(emitted), draft_s=t1 - t0, verify_s=t2 - t1)
            if self.policy is not None:
                self.policy.record(len(drafts), accepted, t1 - t0, t2 - t1)
            context.extend(emitted)
            out.extend(emitted)
            yield out, finished
            if finished:
                return
            self.proposer.observe(state, hidden, context)

    # inference_mode per call, not around the generator: a mode entered there would leak
    # into the consumer's code at every yield and miss a resume on another thread.
    @torch.inference_mode()
    def _prefill(self, ids: list[int], cache) -> tuple | None:
        out = self.model(input_ids=torch.tensor([ids], dtype=torch.long), past_key_values=cache,
                         use_cache=True, logits_to_keep=1,
                         output_hidden_states=self.proposer.needs_hidden)
        return out.hidden_states if self.proposer.needs_hidden else None

    @torch.inference_mode()
    def _step(self, context: list[int], cache, drafts: list[int],
              sampler: Sampler) -> tuple[list[int], tuple | None]:
        """One target forward over [last token] + drafts -> (accepted drafts + 1 token, hidden).

        `hidden` holds the target's hidden states of the positions kept in the cache (the
        last token and the accepted drafts), for proposers that draft from features.
        """
        past = len(context) - 1
        out = self.model(input_ids=torch.tensor([context[-1:] + drafts], dtype=torch.long),
                         past_key_values=cache, use_cache=True,
                         output_hidden_states=self.proposer.needs_hidden)
        logits = out.logits[0]
        emitted = []
        # Sampling the target at each position and accepting while it equals the (point-mass)
        # draft reproduces plain decoding exactly: greedily token for token, else in law.
        for pos in range(len(drafts) + 1):
            token = sampler.pick(logits[pos])
            if pos < len(drafts) and token != drafts[pos] and self._relaxed_accepts(logits[pos], drafts[pos]):
                token = drafts[pos]
            emitted.append(token)
            if pos == len(drafts) or token != drafts[pos]:
                break
        # Keep the cache for the last token and the accepted drafts; the newest emitted
        # token is not in it yet and opens the next step.
        cache.crop(past + len(emitted))
        hidden = None
        if self.proposer.needs_hidden:
            hidden = tuple(h[:, :len(emitted)] for h in out.hidden_states)
        return emitted, hidden

    def _relaxed_accepts(self, logits, draft: int) -> bool:
        return self.relaxed_topk is not None and draft in torch.topk(logits, self.relaxed_topk).indices.tolist()

    def _truncate(self, emitted: list[int], remaining: int,
                  ignore_eos: bool) -> tuple[list[int], bool]:
        emitted = emitted[:remaining]
        if not ignore_eos:
            for i, token in enumerate(emitted):
                if token in self.eos_ids:
                    return emitted[:i + 1], True
        return emitted, len(emitted) == remaining


def _eos_ids(model) -> set[int]:
    """EOS ids from the generation config (authoritative for chat models) and the config."""
    ids: set[int] = set()
    for cfg in (getattr(model, "generation_config", None), model.config):
        value = getattr(cfg, "eos_token_id", None) if cfg is not None else None
        if value is None:
            continue
        ids.update(value if isinstance(value, (list, tuple)) else [value])
    return ids
