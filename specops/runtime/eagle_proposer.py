"""EAGLE-3 and EAGLE heads, as ModelOpt trains and exports them, drafting a chain of tokens.

The head is ModelOpt's own EagleModule rebuilt from the exported checkpoint, so inference runs
the very forward that training did. At position t it reads the target's features of t (for
EAGLE-3 the fc-projected concat of auxiliary layers; for EAGLE the final hidden state) and the
embedding of token t+1, and predicts token t+2. Drafting continues on the head's own output
features. The head keeps a KV cache per request: positions fed with the target's true
features stay, positions fed with its own guesses are cropped after every proposal.
"""
from __future__ import annotations

import dataclasses
import importlib.util
import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import torch

from specops.runtime.proposers import DraftOptions, Proposer


@dataclasses.dataclass
class _EagleState:
    cache: Any
    fed: int = 0  # positions in the head's cache that hold the target's true features
    pending: list[torch.Tensor] = dataclasses.field(default_factory=list)  # [1, n, H] chunks


class EagleProposer(Proposer):
    name = "eagle3"
    needs_hidden: ClassVar[bool] = True

    @dataclasses.dataclass(frozen=True)
    class Options(DraftOptions):
        label, checkpoint = "eagle", "the exported EAGLE checkpoint"

    def __init__(self, options: Options) -> None:
        super().__init__(options)
        self.head, self.config = load_eagle_head(Path(options.draft_dir))
        self.aux_ids = list(self.config.eagle_aux_hidden_state_layer_ids) if self.config.use_aux_hidden_state else []
        self.d2t = getattr(self.head, "d2t", None)
        # EagleModule passes the token embeddings to its first layer through an attribute.
        self._lock = threading.Lock()
        self.embed = None

    def bind(self, target, tokenizer) -> None:
        if target.config.hidden_size != self.config.hidden_size or target.config.vocab_size != self.config.vocab_size:
            raise ValueError(
                f"EAGLE head in {self.options.draft_dir} was trained for hidden size "
                f"{self.config.hidden_size} and vocabulary {self.config.vocab_size}; the target has "
                f"{target.config.hidden_size} and {target.config.vocab_size}")
        if any(i >= target.config.num_hidden_layers - 1 for i in self.aux_ids):
            raise ValueError(f"EAGLE-3 head in {self.options.draft_dir} reads layers {self.aux_ids}; the "
                             f"target's last layer ({target.config.num_hidden_layers - 1}) is not readable")
        self.embed = target.get_input_embeddings()

    def start(self, prompt_ids: Sequence[int]) -> _EagleState:
        from transformers import DynamicCache

        return _EagleState(DynamicCache(config=self.config))

    @torch.inference_mode()
    def observe(self, state: _EagleState, hidden: tuple | None, context_ids: Sequence[int]) -> None:
        if hidden is None:
            return
        if self.aux_ids:
            features = self.head.fc(torch.cat([hidden[i + 1] for i in self.aux_ids], dim=-1))
        else:
            features = hidden[-1]
        state.pending.append(features)

    @torch.inference_mode()
    def propose(self, context_ids: Sequence[int], limit: int, state: _EagleState) -> list[int]:
        k = min(self.options.num_speculative_tokens, limit)
        if k <= 0 or not state.pending:
            return []
        features = torch.cat(state.pending, dim=1)
        state.pending.clear()
        n = features.shape[1]
        # Feature of position t pairs with token t + 1: the last one with the newest token.
        tokens = list(context_ids[state.fed + 1:state.fed + 1 + n])
        drafts: list[int] = []
        with self._lock:
            post, pre = self._forward(features, tokens, state.fed, state.cache)
            state.fed += n
            for step in range(k):
                drafts.append(self._pick(post[:, -1]))
                if step + 1 == k:
                    break
                post, pre = self._forward(pre[:, -1:], drafts[-1:], state.fed + step, state.cache)
            state.cache.crop(state.fed)
        return drafts

    def _forward(self, features: torch.Tensor, tokens: list[int], start: int, cache):
        n = features.shape[1]
        embeds = self.embed(torch.tensor([tokens], dtype=torch.long))
        positions = torch.arange(start, start + n).unsqueeze(0)
        post, pre, _ = self.head(features, embeds, attention_mask=_causal_mask(n, start, features.dtype),
                                 position_ids=positions, past_key_values=cache, use_cache=True)
        return post, pre

    def _pick(self, post: torch.Tensor) -> int:
        token = int(self.head.lm_head(post).argmax(-1))
        return token + int(self.d2t[token]) if self.d2t is not None else token


class Eagle1Proposer(EagleProposer):
    name = "eagle"


def _causal_mask(n: int, past: int, dtype: torch.dtype) -> torch.Tensor | None:
    if n == 1:
        return None  # one query sees every cached key
    mask = torch.full((n, past + n), torch.finfo(dtype).min, dtype=dtype)
    mask = torch.triu(mask, diagonal=past + 1)
    return mask[None, None]


def modelopt_eagle_module_class():
    """ModelOpt's EagleModule, loaded from its file without importing the modelopt package.

    The package's __init__ pulls in quantization and torch.compile (seconds of import, and
    inductor templates that fail to decode in the Triton stub's C-locale interpreter);
    modeling_eagle.py itself needs only torch and transformers.
    """
    spec = importlib.util.find_spec("modelopt")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("nvidia-modelopt is not installed; it provides the EAGLE head module")
    path = Path(spec.submodule_search_locations[0]) / "torch" / "speculative" / "plugins" / "modeling_eagle.py"
    module_spec = importlib.util.spec_from_file_location("specops_modelopt_modeling_eagle", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module.EagleModule


def load_eagle_head(export_dir: Path):
    """ModelOpt's EagleModule with the exported weights loaded strictly; (module, config)."""
    from safetensors.torch import load_file
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaDecoderLayer

    raw = json.loads((export_dir / "config.json").read_text())
    eagle = raw.pop("eagle_config", {})
    weights = load_file(str(export_dir / "model.safetensors"))
    config = LlamaConfig.from_dict({k: v for k, v in raw.items() if k not in ("architectures", "torch_dtype")})
    for key, value in eagle.items():
        setattr(config, key, value)
    config.eagle_decoder_type = "llama"
    config.draft_vocab_size = raw.get("draft_vocab_size") or raw["vocab_size"]
    # The export always carries an lm_head (the target's when the head had none of its own).
    config.has_lm_head = True
    config._attn_implementation = "sdpa"
    head = modelopt_eagle_module_class()(config, LlamaDecoderLayer)
    head.load_state_dict(weights, strict=True)
    head.to(torch.float32).eval()
    head._maybe_init_rope()
    return head, config
