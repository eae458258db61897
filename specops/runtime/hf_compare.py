"""The embedded runtime against HF transformers' own speculative `generate`, in one process.

Same checkpoint, same prompts, greedy, the same number of new tokens (EOS ignored), one torch
thread each. HF runs on its own stock copy of the model (our engine reroutes its copy's linear
layers for verification, see specops.runtime.verify_gemm). HF speculates with
`prompt_lookup_num_tokens` (n-gram) and `assistant_model` (a draft model); EAGLE and Medusa
heads have no HF `generate` counterpart.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import torch


@dataclass(frozen=True)
class PairTiming:
    method: str
    runtime_tok_s: float
    hf_tok_s: float
    runtime_greedy_tok_s: float
    hf_greedy_tok_s: float

    @property
    def runtime_vs_hf(self) -> float:
        return self.runtime_tok_s / self.hf_tok_s


def _prompt_lookup(options: dict) -> dict:
    return {"prompt_lookup_num_tokens": options.get("num_speculative_tokens", 4)}


def _assistant(options: dict) -> dict:
    return {"assistant_model": _stock_model(options["draft_dir"])}


# Our method -> the `generate` arguments of HF's own speculation doing the same thing.
HF_SPECULATION = {"ngram": _prompt_lookup, "draft-target": _assistant}


def compare(target_dir: Path, method: str, options: dict, prompts: list[str], new_tokens: int,
            adaptive: bool = True) -> PairTiming:
    """Tokens/s of our engine and of HF generate for one method (ngram or draft-target)."""
    from specops.runtime.engine import DecodingEngine

    torch.set_num_threads(1)
    ours = DecodingEngine.load(target_dir, method, options, threads=1, adaptive_draft_length=adaptive)
    greedy = DecodingEngine(ours.model, ours.tokenizer, _none(), "none")
    ids = [ours.tokenizer(p)["input_ids"] for p in prompts]
    hf_model = _stock_model(target_dir)
    hf_kwargs = HF_SPECULATION[method](options)
    return PairTiming(
        method,
        runtime_tok_s=_rate(lambda x: ours.generate_ids(x, new_tokens, ignore_eos=True), ids, new_tokens),
        hf_tok_s=_rate(lambda x: _hf(hf_model, x, new_tokens, **hf_kwargs), ids, new_tokens),
        runtime_greedy_tok_s=_rate(lambda x: greedy.generate_ids(x, new_tokens, ignore_eos=True), ids, new_tokens),
        hf_greedy_tok_s=_rate(lambda x: _hf(hf_model, x, new_tokens), ids, new_tokens),
    )


def _stock_model(model_dir: Path):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32).eval()


def _none():
    from specops.runtime.proposers import make_proposer

    return make_proposer("none")


@torch.inference_mode()
def _hf(model, ids: list[int], new_tokens: int, **kwargs) -> list[int]:
    out = model.generate(torch.tensor([ids]), max_new_tokens=new_tokens, min_new_tokens=new_tokens,
                         do_sample=False, **kwargs)
    return out[0, len(ids):].tolist()


def _rate(fn, prompts: list[list[int]], new_tokens: int) -> float:
    fn(prompts[0][:32])  # warm up allocator and kernels outside the measurement
    start = time.perf_counter()
    for ids in prompts:
        fn(ids)
    return len(prompts) * new_tokens / (time.perf_counter() - start)
