"""EAGLE-3 / EAGLE heads and Medusa heads served by the engine, on a tiny random Llama.

The heads are real ModelOpt modules (converted by mtsp.convert, exported by
export_speculative_decoding) with random weights: what is tested is that the runtime drafts
exactly what ModelOpt's own reference generation drafts, and that verification keeps the
output identical to greedy decoding whatever the heads propose.
"""
from __future__ import annotations

import copy

import pytest
import torch

from specops.runtime.engine import DecodingEngine
from specops.runtime.proposers import make_proposer
from tests.unit.runtime.conftest import ByteTokenizer, tiny_llama

PROMPTS = [list(b"def add(a, b):\n    return a + b\n\ndef sub(a, b):\n"), list(b"hello hello hello")]


def _eagle_export(tmp_path, mode: str):
    import modelopt.torch.speculative as mtsp
    from modelopt.torch.export import export_speculative_decoding

    from specops.draft.eagle_train import eagle_config
    from specops.draft.spec import TrainSpec

    target = tiny_llama(258, init=0.3, seed=1, bos_token_id=257, eos_token_id=256, pad_token_id=None)
    converted = copy.deepcopy(target)
    # Two layers: the auxiliary state is layer 0's (the last layer's raw output is not exposed).
    arch = {"eagle_aux_hidden_state_layer_ids": [0]} if mode == "eagle3" else {}
    config = eagle_config(TrainSpec(mode=mode, architecture=arch), converted.config)
    config["eagle_offline"] = False
    config["eagle_architecture_config"]["initializer_range"] = 0.5  # peaked drafts, some accepted
    mtsp.convert(converted, [("eagle", config)])
    converted.eval()
    export_speculative_decoding(converted, export_dir=tmp_path / "export")
    return target, converted, tmp_path / "export"


@pytest.mark.parametrize("mode", ["eagle3", "eagle"])
def test_eagle_head_drafts_what_modelopt_drafts(tmp_path, mode):
    target, converted, export = _eagle_export(tmp_path, mode)
    proposer = make_proposer(mode, {"draft_dir": str(export), "num_speculative_tokens": 3})
    proposer.bind(target, ByteTokenizer())
    for prompt in PROMPTS:
        ids = torch.tensor([prompt])
        with torch.no_grad():
            out = target(input_ids=ids, output_hidden_states=True)
            base_token, drafts = converted.pseudo_speculative_generate(ids, steps=3)
        state = proposer.start(prompt)
        context = prompt + [int(base_token)]
        proposer.observe(state, out.hidden_states, context)
        assert proposer.propose(context, 3, state) == drafts[0].tolist()


@pytest.mark.parametrize("mode", ["eagle3", "eagle"])
@pytest.mark.parametrize("adaptive", [False, True])
def test_eagle_speculation_is_lossless(tmp_path, mode, adaptive):
    target, _, export = _eagle_export(tmp_path, mode)
    greedy = DecodingEngine(target, ByteTokenizer(), make_proposer("none"), "none")
    proposer = make_proposer(mode, {"draft_dir": str(export), "num_speculative_tokens": 3})
    proposer.bind(target, ByteTokenizer())
    spec = DecodingEngine(target, ByteTokenizer(), proposer, mode, adaptive_draft_length=adaptive)
    for prompt in PROMPTS:
        assert spec.generate_ids(prompt, 40, ignore_eos=True) == greedy.generate_ids(prompt, 40, ignore_eos=True)
    assert spec.counters.num_draft_tokens > 0
    assert spec.counters.num_steps < spec.counters.num_generated_tokens or spec.counters.num_accepted_tokens == 0


def _medusa_export(tmp_path, target, heads: int):
    from specops.draft.medusa_train import export_medusa
    from specops.runtime.medusa_proposer import build_heads

    torch.manual_seed(0)
    modules = build_heads(heads, 1, target.config.hidden_size, target.config.vocab_size)
    with torch.no_grad():
        for head in modules:
            head[0].linear.weight.normal_(0, 0.5)
            head[-1].weight.copy_(target.lm_head.weight)
    return export_medusa(modules, target.config, tmp_path / "medusa", "tiny"), modules


def test_medusa_heads_draft_from_the_last_hidden_state_and_stay_lossless(tmp_path):
    target = tiny_llama(258, init=0.3, seed=2, bos_token_id=257, eos_token_id=256, pad_token_id=None)
    export, modules = _medusa_export(tmp_path, target, heads=3)
    proposer = make_proposer("medusa", {"draft_dir": str(export), "num_speculative_tokens": 3})
    proposer.bind(target, ByteTokenizer())
    prompt = PROMPTS[0]
    with torch.no_grad():
        hidden = target(input_ids=torch.tensor([prompt]), output_hidden_states=True).hidden_states
    state = proposer.start(prompt)
    proposer.observe(state, hidden, prompt)
    expected = [int(modules[i](hidden[-1][0, -1]).argmax()) for i in range(3)]
    assert proposer.propose(prompt, 3, state) == expected
    greedy = DecodingEngine(target, ByteTokenizer(), make_proposer("none"), "none")
    spec = DecodingEngine(target, ByteTokenizer(), proposer, "medusa")
    for p in PROMPTS:
        assert spec.generate_ids(p, 40, ignore_eos=True) == greedy.generate_ids(p, 40, ignore_eos=True)
    assert spec.counters.num_draft_tokens > 0


def test_medusa_refuses_more_drafts_than_heads_and_trees(tmp_path):
    target = tiny_llama(258, init=0.3, seed=2)
    export, _ = _medusa_export(tmp_path, target, heads=2)
    with pytest.raises(ValueError, match="has 2 heads"):
        make_proposer("medusa", {"draft_dir": str(export), "num_speculative_tokens": 3})
    with pytest.raises(ValueError, match="medusa_choices"):
        make_proposer("medusa", {"draft_dir": str(export), "medusa_choices": [[0], [0, 0]]})


def test_resblock_computes_what_modelopts_does():
    from modelopt.torch.speculative.utils import ResBlock as ModelOptResBlock

    from specops.runtime.medusa_proposer import ResBlock

    theirs, ours = ModelOptResBlock(16), ResBlock(16)
    torch.nn.init.normal_(theirs.linear.weight)
    ours.load_state_dict(theirs.state_dict(), strict=True)
    x = torch.randn(3, 16)
    assert torch.allclose(ours(x), theirs(x))


def test_trained_methods_need_their_draft_dir():
    for method in ("eagle3", "eagle", "medusa", "draft-target"):
        with pytest.raises(ValueError, match="draft_dir"):
            make_proposer(method, {})
