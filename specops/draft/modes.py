"""Training modes and the ModelOpt options each accepts, checked without importing ModelOpt.

Importing modelopt takes ~12 s (it pulls torch), too slow for profile validation, so the
accepted names are listed here; tests/unit/draft/test_modes.py checks them against
ModelOpt's own EagleConfig/MedusaConfig so the lists cannot drift silently.
"""
from __future__ import annotations

from typing import Any

# Which training mode makes the draft each speculative method serves.
MODE_OF_METHOD = {"eagle3": "eagle3", "eagle": "eagle", "medusa": "medusa", "draft-target": "distill"}

# How each mode trains, in one line (plans and reports).
MODE_SUMMARY = {
    "eagle3": "ModelOpt eagle mode (EAGLE-3: auxiliary hidden states)",
    "eagle": "ModelOpt eagle mode (EAGLE: final hidden state)",
    "medusa": "ModelOpt medusa mode",
    "distill": "draft derived from the target, KL-distilled",
}

# EagleConfig fields a profile may set. The rest are owned by specops: offline hidden-state
# caching on a CPU (online on GPUs), torch.compile (off on a CPU, on on GPUs: specops/draft/
# data/modelopt.yaml), the architecture (its own section), the base model frozen (the method's
# premise), and features neither trainer offers (LoRA co-training, NVTX).
EAGLE_OPTIONS = frozenset({
    "eagle_self_logit_distillation",
    "eagle_loss_decay_factor",
    "eagle_ttt_steps",
    "eagle_mix_hidden_states",
    "eagle_report_acc",
    "eagle_export_rope_scaling",
})
EAGLE_OWNED = {
    "eagle_offline": "set by specops: offline on the CPU (hidden states cached once), online on GPUs",
    "eagle_use_torch_compile": "set by specops to false on the CPU, where torch.compile does not pay off, "
                               "and true on GPUs (ModelOpt's default)",
    "eagle_architecture_config": "use the draft.train.architecture section",
    "eagle_freeze_base_model": "the base model is always frozen",
    "eagle_decoder_type": "only llama decoders are trained here",
    "eagle_reuse_base_decoder": "not supported by the CPU trainer",
    "eagle_hidden_state_distillation": "not supported by the CPU trainer",
    "eagle_enable_nvtx": "GPU profiling only",
    "eagle_base_lora": "LoRA co-training needs a GPU-sized run",
    "eagle_base_lora_rank": "LoRA co-training needs a GPU-sized run",
    "eagle_base_lora_alpha": "LoRA co-training needs a GPU-sized run",
    "eagle_base_lora_target_modules": "LoRA co-training needs a GPU-sized run",
    "eagle_base_lora_preservation_loss_weight": "LoRA co-training needs a GPU-sized run",
    "eagle_base_lora_warmup_steps": "LoRA co-training needs a GPU-sized run",
    "eagle_base_lora_start_layer": "LoRA co-training needs a GPU-sized run",
    "eagle_base_lora_logits_detach_prob": "LoRA co-training needs a GPU-sized run",
}
MEDUSA_OPTIONS = frozenset({"medusa_num_layers"})
MEDUSA_OWNED = {"medusa_num_heads": "set from method.num_speculative_tokens (one head per drafted token)"}

# eagle_architecture_config keys a profile may override; hidden and vocabulary sizes always
# come from the target, the auxiliary-state switch from the mode.
ARCHITECTURE_KEYS = frozenset({
    "hidden_act", "num_hidden_layers", "intermediate_size", "num_attention_heads",
    "num_key_value_heads", "head_dim", "initializer_range", "rms_norm_eps", "mlp_bias",
    "attention_bias", "attention_dropout", "use_input_layernorm_in_first_layer",
    "use_last_layernorm", "eagle_aux_hidden_state_layer_ids", "rope_theta", "rope_scaling",
})
ARCHITECTURE_OWNED = {
    "hidden_size": "always the target's", "vocab_size": "always the target's",
    "max_position_embeddings": "always the target's", "torch_dtype": "float32 on CPU, bfloat16 on GPUs",
    "use_aux_hidden_state": "set by the mode (eagle3: true, eagle: false)",
    "draft_vocab_size": "use draft.train.draft_vocab_size",
}


def check_mode_options(mode: str, options: dict[str, Any], architecture: dict[str, Any]) -> None:
    """Raise ValueError naming every option the mode does not accept, and what it accepts."""
    if mode in ("eagle3", "eagle"):
        _check("options", options, EAGLE_OPTIONS, EAGLE_OWNED, f"ModelOpt mode {mode!r}")
        _check("architecture", architecture, ARCHITECTURE_KEYS, ARCHITECTURE_OWNED, f"ModelOpt mode {mode!r}")
        return
    if architecture:
        raise ValueError(f"architecture: only the eagle modes take an architecture; mode {mode!r} does not")
    if mode == "medusa":
        _check("options", options, MEDUSA_OPTIONS, MEDUSA_OWNED, "ModelOpt mode 'medusa'")
    elif options:
        raise ValueError(f"options: mode {mode!r} takes no ModelOpt options (use draft_layers, epochs, lr)")


def _check(field: str, given: dict[str, Any], allowed: frozenset[str], owned: dict[str, str], who: str) -> None:
    problems = []
    for key in sorted(given):
        if key in owned:
            problems.append(f"{key!r} cannot be set ({owned[key]})")
        elif key not in allowed:
            problems.append(f"unknown option {key!r}")
    if problems:
        raise ValueError(f"{field}: {who}: {'; '.join(problems)}; allowed: {', '.join(sorted(allowed))}")
