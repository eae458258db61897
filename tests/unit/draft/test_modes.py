"""Training modes: accepted ModelOpt options stay in step with ModelOpt, and bad ones are named."""
from __future__ import annotations

import pytest

from specops.draft.modes import (
    ARCHITECTURE_KEYS,
    ARCHITECTURE_OWNED,
    EAGLE_OPTIONS,
    EAGLE_OWNED,
    MEDUSA_OPTIONS,
    MEDUSA_OWNED,
    MODE_OF_METHOD,
    check_mode_options,
)
from specops.draft.spec import TrainSpec


def test_eagle_and_medusa_option_lists_cover_modelopts_config_fields():
    from modelopt.torch.speculative.config import EagleConfig, MedusaConfig

    assert EAGLE_OPTIONS | set(EAGLE_OWNED) == set(EagleConfig.model_fields)
    assert MEDUSA_OPTIONS | set(MEDUSA_OWNED) == set(MedusaConfig.model_fields)


def test_architecture_keys_are_modelopts_eagle_architecture_keys():
    from modelopt.torch.speculative.config import eagle3_default_config

    known = set(eagle3_default_config) | {"hidden_size", "vocab_size", "max_position_embeddings", "draft_vocab_size"}
    assert ARCHITECTURE_KEYS <= known
    assert set(ARCHITECTURE_OWNED) <= known


def test_every_trainable_method_has_a_registered_trainer():
    from specops.draft.train import TRAINERS

    assert sorted(TRAINERS.names()) == sorted(set(MODE_OF_METHOD.values())) == sorted(TrainSpec.MODES)


@pytest.mark.parametrize("mode,options,architecture,message", [
    ("eagle3", {"eagle_ttt_stepz": 2}, {}, "options: ModelOpt mode 'eagle3': unknown option 'eagle_ttt_stepz'; allowed: "),
    ("eagle3", {"eagle_use_torch_compile": True}, {}, "'eagle_use_torch_compile' cannot be set (set by specops to false"),
    ("eagle", {"eagle_offline": False}, {}, "'eagle_offline' cannot be set"),
    ("eagle3", {}, {"hidden_size": 8}, "architecture: ModelOpt mode 'eagle3': 'hidden_size' cannot be set (always the target's)"),
    ("medusa", {"medusa_num_heads": 3}, {}, "'medusa_num_heads' cannot be set (set from method.num_speculative_tokens"),
    ("medusa", {"eagle_ttt_steps": 2}, {}, "unknown option 'eagle_ttt_steps'; allowed: medusa_num_layers"),
    ("medusa", {}, {"num_hidden_layers": 2}, "only the eagle modes take an architecture"),
    ("distill", {"medusa_num_layers": 1}, {}, "mode 'distill' takes no ModelOpt options"),
])
def test_bad_options_are_refused_with_what_is_allowed(mode, options, architecture, message):
    with pytest.raises(ValueError) as info:
        check_mode_options(mode, options, architecture)
    assert message in str(info.value)


def test_known_options_pass():
    check_mode_options("eagle3", {"eagle_ttt_steps": 2, "eagle_loss_decay_factor": 0.8}, {"num_hidden_layers": 1})
    check_mode_options("medusa", {"medusa_num_layers": 2}, {})


def test_unknown_mode_names_the_modes():
    with pytest.raises(ValueError, match="unknown ModelOpt mode 'eagle4'; allowed: eagle3, eagle, medusa, distill"):
        TrainSpec(mode="eagle4")
