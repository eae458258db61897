"""Medusa heads: head i reads the target's last hidden state at position t and guesses t+2+i.

Heads are loaded from the Medusa checkpoint format (`medusa_lm_head.safetensors`, keys
`{head}.{layer}.linear.*` and `{head}.{num_layers}.weight`, plus `config.json`), the layout of
the Medusa reference implementation that TensorRT-LLM's converter reads; specops writes it
(`write_medusa_layout`) from ModelOpt's `medusa_heads` (specops/draft/medusa_train.py and gpu_train.py).
"""
from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import torch
from torch import nn

from specops.runtime.proposers import DraftOptions, Proposer

MEDUSA_WEIGHTS = "medusa_lm_head.safetensors"


@dataclasses.dataclass
class _MedusaState:
    last_hidden: torch.Tensor | None = None  # [H], the newest position the target verified


class MedusaProposer(Proposer):
    name = "medusa"
    needs_hidden: ClassVar[bool] = True

    @dataclasses.dataclass(frozen=True)
    class Options(DraftOptions):
        label, checkpoint = "medusa", "the Medusa heads checkpoint"
        medusa_choices: Any = None

        def __post_init__(self) -> None:
            super().__post_init__()
            if self.medusa_choices is not None:
                raise ValueError("medusa: medusa_choices (tree verification) is not supported by "
                                 "the embedded runtime, which verifies one chain")

    def __init__(self, options: Options) -> None:
        super().__init__(options)
        self.heads, self.config = load_medusa_heads(Path(options.draft_dir))
        if options.num_speculative_tokens > len(self.heads):
            raise ValueError(f"medusa: num_speculative_tokens={options.num_speculative_tokens} but "
                             f"{options.draft_dir} has {len(self.heads)} heads")

    def bind(self, target, tokenizer) -> None:
        if target.config.hidden_size != self.config["hidden_size"]:
            raise ValueError(f"Medusa heads in {self.options.draft_dir} expect hidden size "
                             f"{self.config['hidden_size']}; the target has {target.config.hidden_size}")

    def start(self, prompt_ids: Sequence[int]) -> _MedusaState:
        return _MedusaState()

    def observe(self, state: _MedusaState, hidden: tuple | None, context_ids: Sequence[int]) -> None:
        if hidden is not None:
            state.last_hidden = hidden[-1][0, -1]

    @torch.inference_mode()
    def propose(self, context_ids: Sequence[int], limit: int, state: _MedusaState) -> list[int]:
        k = min(self.options.num_speculative_tokens, limit)
        if k <= 0 or state.last_hidden is None:
            return []
        return [int(self.heads[i](state.last_hidden).argmax(-1)) for i in range(k)]


class ResBlock(nn.Module):
    """ModelOpt's (and Medusa's) ResBlock: x + SiLU(Linear(x)); same parameter names.

    Defined here rather than imported because importing modelopt.torch pulls in
    torch.compile machinery the serving process does not need (tests/unit/runtime checks
    that it computes what ModelOpt's does).
    """

    def __init__(self, hidden_size: int) -> None:
        super().__init__()
        self.linear = nn.Linear(hidden_size, hidden_size, bias=True)
        self.act = nn.SiLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.act(self.linear(x))


def build_heads(num_heads: int, num_layers: int, hidden: int, vocab: int) -> nn.ModuleList:
    """The module layout of ModelOpt's (and Medusa's) heads: ResBlocks, then a vocab projection."""
    return nn.ModuleList(
        nn.Sequential(*[ResBlock(hidden) for _ in range(num_layers)], nn.Linear(hidden, vocab, bias=False))
        for _ in range(num_heads)
    )


def load_medusa_heads(draft_dir: Path) -> tuple[nn.ModuleList, dict]:
    from safetensors.torch import load_file

    config = json.loads((draft_dir / "config.json").read_text())
    heads = build_heads(config["medusa_num_heads"], config["medusa_num_layers"],
                        config["hidden_size"], config["vocab_size"])
    heads.load_state_dict(load_file(str(draft_dir / MEDUSA_WEIGHTS)), strict=True)
    return heads.to(torch.float32).eval(), config


def write_medusa_layout(tensors: dict[str, torch.Tensor], export_dir: Path, hidden_size: int, vocab_size: int,
                        base: str) -> Path:
    """Write the Medusa checkpoint layout (config.json + medusa_lm_head.safetensors) from the heads' tensors,
    keyed as above; the head and layer counts are read off the keys."""
    from safetensors.torch import save_file

    heads = 1 + max(int(key.split(".")[0]) for key in tensors)
    layers = max(int(key.split(".")[1]) for key in tensors)  # the last index of a head is its projection
    export_dir.mkdir(parents=True, exist_ok=True)
    save_file({k: v.detach().contiguous() for k, v in tensors.items()}, str(export_dir / MEDUSA_WEIGHTS))
    dtype = str(next(iter(tensors.values())).dtype).removeprefix("torch.")
    config = {"medusa_num_heads": heads, "medusa_num_layers": layers, "hidden_size": hidden_size,
              "vocab_size": vocab_size, "base_model_name_or_path": base, "architectures": ["MedusaModel"],
              "torch_dtype": dtype}
    (export_dir / "config.json").write_text(json.dumps(config, indent=2))
    return export_dir
