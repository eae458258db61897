"""STAND-IN decoding engine for the Triton tests (not the product's engine).

Echoes the prompt's words back, one word per step, and fakes speculative counters
(every step: one draft of 2 tokens, 1 accepted at position 0), so the Triton plumbing can be
tested without a model. Copied next to model.py; selected with the `engine` parameter
"standin_echo_engine:StandinEchoEngine".
"""
from __future__ import annotations

import time
from pathlib import Path


class StandinEchoEngine:
    def __init__(self, delay_s: float):
        self.delay_s = delay_s
        self.num_drafts = 0
        self.num_draft_tokens = 0
        self.num_accepted_tokens = 0
        self.accepted_per_position = [0, 0]
        self.num_steps = 0
        self.num_generated_tokens = 0

    @classmethod
    def load(cls, model_dir: Path, method: str, options: dict, threads: int = 1,
             adaptive_draft_length: bool = False) -> StandinEchoEngine:
        if options.get("fail_load"):
            raise RuntimeError(f"stand-in engine refused to load {model_dir} ({method})")
        return cls(delay_s=float(options.get("delay_s", 0.0)))

    def generate(self, prompt, max_tokens, temperature=0.0, top_p=1.0, top_k=0, seed=None, stop=None, ignore_eos=False):
        if "RAISE" in prompt:
            raise ValueError("stand-in engine was asked to fail")
        words = prompt.split() or ["<empty>"]
        for i in range(max_tokens):
            if self.delay_s:
                time.sleep(self.delay_s)
            self.num_steps += 1
            self.num_drafts += 1
            self.num_draft_tokens += 2
            self.num_accepted_tokens += 1
            self.accepted_per_position[0] += 1
            self.num_generated_tokens += 1
            yield " " + words[i % len(words)]
