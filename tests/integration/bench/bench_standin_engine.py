"""STAND-IN decoding engine for the genai-perf integration test (not the product's engine).

Plugged into the product's Triton model file (`specops/runtime/triton_model.py`) through its
`engine` parameter, so genai-perf's requests go through the real vLLM-I/O parsing. It echoes
the prompt's words, one per step, sleeping `delay_s` per step, and appends the keyword
arguments of every `generate` call as a JSON line to `record_path`, so the test can check
what genai-perf's sampling_parameters turned into.
"""
from __future__ import annotations

import json
import time
from pathlib import Path


class RecordingEchoEngine:
    def __init__(self, delay_s: float, record_path: Path | None):
        self.delay_s = delay_s
        self.record_path = record_path
        self.num_generated_tokens = 0

    @classmethod
    def load(cls, model_dir: Path, method: str, options: dict, threads: int = 1,
             adaptive_draft_length: bool = False) -> RecordingEchoEngine:
        record = options.get("record_path")
        return cls(float(options.get("delay_s", 0.0)), Path(record) if record else None)

    def generate(self, prompt, max_tokens, **kwargs):
        if self.record_path is not None:
            with self.record_path.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps({"max_tokens": max_tokens, **kwargs}, sort_keys=True) + "\n")
        words = prompt.split() or ["<empty>"]
        for i in range(max_tokens):
            if self.delay_s:
                time.sleep(self.delay_s)
            self.num_generated_tokens += 1
            yield " " + words[i % len(words)]
