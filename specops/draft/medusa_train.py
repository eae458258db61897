"""Medusa heads trained with ModelOpt's `medusa` mode on a frozen target, offline.

ModelOpt builds the heads (ResBlocks, then a projection to the vocabulary); each head's
projection starts as a frozen copy of the target's lm_head, as the Medusa paper does, and the
ResBlocks learn. Head i is trained to predict token t+2+i from the target's last hidden state
at t (the Medusa convention TensorRT-LLM and vLLM follow: the target's own lm_head already
gives t+1). Exported in the Medusa checkpoint layout (see specops/runtime/medusa_proposer.py).
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F

from specops.draft.prepare import prepare_training
from specops.draft.spec import TrainResult, TrainSpec
from specops.run.progress import Progress
from specops.runtime.medusa_proposer import write_medusa_layout

# ModelOpt's HFMedusaModel.forward weighs head i by coefficient * decay**i; same here.
HEADS_COEFFICIENT, DECAY = 0.2, 0.8


def train_medusa(spec: TrainSpec, target_dir: Path, data_path: Path, out_dir: Path,
                 log: Callable[[str], None], draft_length: int,
                 progress: Progress | None = None) -> TrainResult:
    """Train one Medusa head per drafted token and export them to out_dir/export."""
    import modelopt.torch.speculative as mtsp

    training = prepare_training(spec, target_dir, data_path)
    training.cache()
    model = training.model
    log(f"medusa: {training.size}; hidden states cached in {training.cache_s:.0f}s")
    options = {"medusa_num_heads": draft_length, "medusa_num_layers": 1} | dict(spec.options)
    mtsp.convert(model, [("medusa", options)])
    heads = model.medusa_heads
    rows = training.loss_rows()
    with torch.no_grad():
        for head in heads:
            head[-1].weight.copy_(model.lm_head.weight)
            head[-1].weight.requires_grad_(False)

    def step(batch):
        ids, mask, hidden, _ = batch
        return _medusa_loss(heads, hidden, ids, mask, rows)

    stats = training.run(heads, step, log, progress)
    export_dir = export_medusa(heads, model.config, out_dir / "export", str(target_dir))
    training.save_modelopt_state(model, out_dir, "medusa_heads", heads)
    log(f"medusa: exported to {export_dir}")
    return training.result(export_dir, stats)


def _medusa_loss(heads, hidden, ids, mask, rows):
    """Cross-entropy of head i at t against token t+2+i, over the loss vocabulary."""
    total, metrics = 0.0, {}
    remap = None
    if rows is not None:
        remap = torch.full((heads[0][-1].weight.shape[0],), -100, dtype=torch.long)
        remap[rows] = torch.arange(rows.numel())
    for i, head in enumerate(heads):
        shift = 2 + i
        if hidden.shape[1] <= shift:
            break
        feats = head[:-1](hidden[:, :-shift])
        weight = head[-1].weight if rows is None else head[-1].weight[rows]
        logits = feats @ weight.T
        labels = ids[:, shift:].clone()
        labels[mask[:, shift:] == 0] = -100
        if remap is not None:
            labels = torch.where(labels >= 0, remap[labels.clamp(min=0)], labels)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=-100)
        total = total + loss * HEADS_COEFFICIENT * DECAY ** i
        valid = labels != -100
        metrics[f"acc{i}"] = float(((logits.argmax(-1) == labels) & valid).sum() / valid.sum().clamp(min=1))
    return total, metrics


def export_medusa(heads, target_config, export_dir: Path, base: str) -> Path:
    """Write the Medusa checkpoint layout: config.json + medusa_lm_head.safetensors."""
    return write_medusa_layout(heads.state_dict(), export_dir, target_config.hidden_size, target_config.vocab_size,
                               base)
