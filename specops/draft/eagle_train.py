"""EAGLE-3 / EAGLE heads trained with ModelOpt on a frozen target, offline, and exported.

The target runs once over the data and its hidden states are cached (ModelOpt's offline
mode), so each epoch costs only the head. Export uses ModelOpt's
`export_speculative_decoding`, the checkpoint format vLLM and TRT-LLM load.
"""
from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path

import torch

from specops.draft.prepare import draft_vocabulary, prepare_training
from specops.draft.spec import TrainResult, TrainSpec
from specops.run.progress import Progress


def eagle_config(spec: TrainSpec, target_config) -> dict:
    """ModelOpt's eagle mode config, its architecture sized for the target and for a CPU."""
    from modelopt.torch.speculative.config import eagle3_default_config
    from modelopt.torch.speculative.eagle.default_config import default_eagle_config

    arch = copy.deepcopy(eagle3_default_config if spec.mode == "eagle3" else default_eagle_config)
    theta = _rope_theta(target_config)
    arch.update(
        intermediate_size=target_config.intermediate_size,
        num_attention_heads=target_config.num_attention_heads,
        num_key_value_heads=target_config.num_key_value_heads,
        head_dim=getattr(target_config, "head_dim", None)
        or target_config.hidden_size // target_config.num_attention_heads,
        rms_norm_eps=target_config.rms_norm_eps,
        rope_theta=theta,
        rope_scaling={"rope_type": "default", "rope_theta": theta},
        torch_dtype="float32",
        # ModelOpt's exporter requires the head's final norm (norm.weight) for llama drafts,
        # which its plain eagle default leaves out; EAGLE-3's default has it.
        use_last_layernorm=True,
    )
    if spec.mode == "eagle3" and not arch.get("eagle_aux_hidden_state_layer_ids"):
        from modelopt.torch.speculative.plugins.hf_eagle import default_eagle_aux_layer_ids

        arch["eagle_aux_hidden_state_layer_ids"] = default_eagle_aux_layer_ids(target_config.num_hidden_layers)
    arch.update(copy.deepcopy(spec.architecture))
    last = target_config.num_hidden_layers - 1
    if any(i >= last or i < 0 for i in arch.get("eagle_aux_hidden_state_layer_ids") or []):
        # The last layer's raw output is not among transformers' hidden_states (that entry is
        # after the final norm), so neither the cached pass nor the runtime could feed it.
        raise ValueError(f"architecture.eagle_aux_hidden_state_layer_ids must lie in 0..{last - 1} "
                         f"for this {last + 1}-layer target, got {arch['eagle_aux_hidden_state_layer_ids']}")
    if spec.draft_vocab_size and spec.draft_vocab_size < target_config.vocab_size:
        arch["draft_vocab_size"] = spec.draft_vocab_size
    # Export keeps the rope the head was trained with unless the profile asks otherwise:
    # ModelOpt's default swaps in YaRN x32, which this runtime would then have to match.
    options = {"eagle_export_rope_scaling": {}} | dict(spec.options)
    return {
        **options,
        "eagle_architecture_config": arch,
        "eagle_use_torch_compile": False,
        "eagle_offline": True,
        "eagle_freeze_base_model": True,
    }


def train_eagle(spec: TrainSpec, target_dir: Path, data_path: Path, out_dir: Path,
                log: Callable[[str], None], draft_length: int = 0,
                progress: Progress | None = None) -> TrainResult:
    """Train, export to out_dir/export, keep ModelOpt's state in out_dir/modelopt."""
    import modelopt.torch.speculative as mtsp
    from modelopt.torch.export import export_speculative_decoding

    training = prepare_training(spec, target_dir, data_path)
    model, seqs = training.model, training.seqs
    config = eagle_config(spec, model.config)
    arch = config["eagle_architecture_config"]
    aux_ids = list(arch.get("eagle_aux_hidden_state_layer_ids") or []) if arch["use_aux_hidden_state"] else []
    log(f"{spec.mode}: {training.size}; caching the target's hidden states")
    # ModelOpt caches its train-time-test attention masks per step for the first sequence
    # length it sees, so every batch is padded to one length (as its own data collator does).
    cached = training.cache(aux_ids, pad_to=max(len(s) for s in seqs))
    log(f"{spec.mode}: hidden states of {len(cached)} batches cached in {training.cache_s:.0f}s")
    base_lm_head = model.lm_head.weight.detach().clone()
    mtsp.convert(model, [("eagle", config)])
    _init_draft_vocab(model, seqs, base_lm_head)
    # The whole model trains (ModelOpt's forward returns the loss in train mode); only the head has trainable
    # parameters, the base being frozen.
    stats = training.run(model, _eagle_step(model), log, progress)
    export_dir = out_dir / "export"
    # ModelOpt's deployable export; its own state (to resume or inspect) in out_dir/modelopt.
    export_speculative_decoding(model, export_dir=export_dir)
    training.save_modelopt_state(model, out_dir, "eagle_module", model.eagle_module)
    log(f"{spec.mode}: exported to {export_dir}")
    return training.result(export_dir, stats)


def _eagle_step(model) -> Callable:
    """One training step on a cached batch: the loss and the head's accuracy at each draft position."""
    def step(batch):
        ids, mask, hidden, aux = batch
        outputs = {"base_model_hidden_states": hidden}
        if aux is not None:
            outputs["aux_hidden_states"] = aux
        out = model(input_ids=ids, attention_mask=mask, base_model_outputs=outputs)
        return out.loss, {f"acc{i}": float(a) for i, a in enumerate(out.train_acc[0])}

    return step


def _rope_theta(config) -> float:
    params = getattr(config, "rope_parameters", None) or getattr(config, "rope_scaling", None) or {}
    return float(params.get("rope_theta") or getattr(config, "rope_theta", None) or 10000.0)


@torch.no_grad()
def _init_draft_vocab(model, seqs, base_lm_head: torch.Tensor) -> None:
    """Fill d2t from token frequencies and start the head's reduced lm_head at the target's rows."""
    module = model.eagle_module
    if not hasattr(module, "d2t"):
        return
    chosen = draft_vocabulary(seqs, module.d2t.numel(), base_lm_head.shape[0])
    module.d2t.copy_(chosen - torch.arange(chosen.numel()))
    module.lm_head.weight.copy_(base_lm_head[chosen])
