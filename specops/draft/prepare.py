"""What every CPU trainer starts from: the frozen target, the data's sequences and one frozen pass of the target
over them, cached for every epoch (offline); then the loop over those batches and the TrainResult it ends in."""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from specops.draft.loop import LoopStats, run_loop, shuffled_epochs
from specops.draft.sequences import batches, load_sequences, token_count
from specops.draft.spec import TrainSpec
from specops.draft.target import draft_vocabulary, load_target, pad_id
from specops.draft.train_result import TrainResult
from specops.run.progress import Progress


@dataclass
class Training:
    spec: TrainSpec
    model: Any  # the target, every parameter frozen
    tokenizer: Any
    seqs: list[list[int]]  # the data's token ids, cut to spec.seq_len, in a seeded order
    cached: list[tuple] = field(default_factory=list)  # the target's pass, by cache()
    cache_s: float = 0.0  # how long that pass took

    @property
    def size(self) -> str:
        return f"{len(self.seqs)} sequences, {token_count(self.seqs)} tokens"

    @torch.no_grad()  # not inference_mode: the cached tensors feed autograd later
    def cache(self, aux_ids: Sequence[int] = (), pad_to: int | None = None) -> list[tuple]:
        """The target's pass, timed: per batch (input_ids, mask, final post-norm hidden, concatenated aux layer
        outputs|None), every batch right-padded to its longest or to `pad_to`."""
        start, cached = time.monotonic(), []
        for ids, mask in batches(self.seqs, self.spec.batch_size, pad_id(self.tokenizer, self.model), pad_to):
            out = self.model(input_ids=ids, attention_mask=mask, output_hidden_states=True, logits_to_keep=1)
            hs = out.hidden_states  # hs[i + 1]: layer i's output (what ModelOpt's hooks collect); hs[-1]: normed
            aux = torch.cat([hs[i + 1] for i in aux_ids], dim=-1).clone() if aux_ids else None
            cached.append((ids, mask, hs[-1].clone(), aux))
        self.cached, self.cache_s = cached, time.monotonic() - start
        return cached

    def loss_rows(self) -> torch.Tensor | None:
        """The target ids the loss covers (spec.loss_vocab_size most frequent); None: the whole vocabulary."""
        size, vocab = self.spec.loss_vocab_size, self.model.config.vocab_size
        return None if not size or size >= vocab else draft_vocabulary(self.seqs, size, vocab)

    def run(self, module: torch.nn.Module, step: Callable, log: Callable[[str], None],
            progress: Progress | None) -> LoopStats:
        """Train `module`'s trainable parameters with run_loop over the cached batches, in a new seeded order every
        epoch, as long as the spec says; the module is in train mode for the loop and in eval mode after it."""
        spec = self.spec
        params = [p for p in module.parameters() if p.requires_grad]
        module.train()
        stats = run_loop(params, step, shuffled_epochs(self.cached, spec.seed), epochs=spec.epochs,
                         steps_per_epoch=len(self.cached), max_steps=spec.max_steps, lr=spec.lr, log=log,
                         label=f"train {spec.mode}", progress=progress)
        module.eval()
        return stats

    def save_modelopt_state(self, model, out_dir: Path, name: str, module: torch.nn.Module) -> None:
        """ModelOpt's state and the trained module's weights in out_dir/modelopt/<name>.pth (to resume or inspect)."""
        import modelopt.torch.opt as mto

        (out_dir / "modelopt").mkdir(parents=True, exist_ok=True)
        torch.save({"modelopt_state": mto.modelopt_state(model), name: module.state_dict()},
                   out_dir / "modelopt" / f"{name}.pth")

    def result(self, export_dir: Path, stats: LoopStats) -> TrainResult:
        return TrainResult(mode=self.spec.mode, export_dir=export_dir, sequences=len(self.seqs),
                           tokens=token_count(self.seqs), steps=stats.steps, train_seconds=stats.seconds,
                           prepare_seconds=self.cache_s, final_loss=stats.final_loss,
                           train_accuracy=stats.last_metrics)


def prepare_training(spec: TrainSpec, target_dir: Path, data_path: Path) -> Training:
    """Torch seeded, the target loaded frozen and the data tokenized; Training.cache() then runs the target."""
    torch.manual_seed(spec.seed)
    model, tokenizer = load_target(target_dir, spec.threads)
    return Training(spec, model, tokenizer, load_sequences(data_path, tokenizer, spec.seq_len, spec.seed))

