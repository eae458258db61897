"""Draft-target: a draft model derived from the target and distilled on the synthesized data.

The draft keeps the target's embeddings, final norm, lm_head and tokenizer, and a few of its
layers spread over the depth (first and last included). Those layers and the norm learn to
match the target's next-token distribution (KL over the loss vocabulary) from the target's
cached final hidden states, so the target runs once over the data.
"""
from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F

from specops.draft.prepare import prepare_training
from specops.draft.spec import TrainResult, TrainSpec
from specops.run.progress import Progress


def kept_layers(total: int, keep: int) -> list[int]:
    """`keep` layer indices spread evenly over `total`, the first and the last included."""
    if keep >= total:
        return list(range(total))
    if keep == 1:
        return [total - 1]
    return sorted({round(i * (total - 1) / (keep - 1)) for i in range(keep)})


def derive_draft(target, keep: int):
    """A copy of the target with only `keep` of its decoder layers."""
    layers = kept_layers(target.config.num_hidden_layers, keep)
    config = copy.deepcopy(target.config)
    config.num_hidden_layers = len(layers)
    if getattr(config, "layer_types", None):
        config.layer_types = [config.layer_types[i] for i in layers]
    draft = type(target)(config)
    state = target.state_dict()
    mapped = {}
    for key, value in state.items():
        if ".layers." in key:
            prefix, rest = key.split(".layers.", 1)
            index, tail = rest.split(".", 1)
            if int(index) not in layers:
                continue
            key = f"{prefix}.layers.{layers.index(int(index))}.{tail}"
        mapped[key] = value.clone()
    draft.load_state_dict(mapped, strict=True)
    return draft, layers


def train_distill(spec: TrainSpec, target_dir: Path, data_path: Path, out_dir: Path,
                  log: Callable[[str], None], draft_length: int = 0,
                  progress: Progress | None = None) -> TrainResult:
    """Derive, distill and save the draft model (HF checkpoint + tokenizer) to out_dir/export."""
    training = prepare_training(spec, target_dir, data_path)
    training.cache()
    target, tokenizer = training.model, training.tokenizer
    draft, layers = derive_draft(target, spec.draft_layers)
    log(f"distill: draft keeps layers {layers} of {target.config.num_hidden_layers}; "
        f"{training.size}; target cached in {training.cache_s:.0f}s")
    rows = training.loss_rows()
    head = target.lm_head.weight if rows is None else target.lm_head.weight[rows]
    # Embeddings and lm_head stay the target's (tied, and they carry the shared vocabulary).
    for name, p in draft.named_parameters():
        p.requires_grad_(".layers." in name or name.endswith("norm.weight"))

    def step(batch):
        ids, mask, hidden, _ = batch
        out = draft.model(input_ids=ids, attention_mask=mask)
        student = F.log_softmax(out.last_hidden_state @ head.T, dim=-1)
        with torch.no_grad():
            teacher = F.softmax(hidden @ head.T, dim=-1)
        kl = (teacher * (teacher.clamp_min(1e-9).log() - student)).sum(-1)
        valid = mask.bool()
        loss = kl[valid].mean()
        agree = (student.argmax(-1) == teacher.argmax(-1))[valid].float().mean()
        return loss, {"top1_agreement": float(agree)}

    stats = training.run(draft, step, log, progress)
    export_dir = out_dir / "export"
    draft.save_pretrained(str(export_dir))
    tokenizer.save_pretrained(str(export_dir))
    log(f"distill: draft saved to {export_dir}")
    return training.result(export_dir, stats)
