"""Every training mode on the real embedded target, shrunk to a few steps: it trains, exports in
the documented layout, loads back into the runtime, and speculation stays lossless. Bad data
and a foreign tokenizer are refused before any training step."""
from __future__ import annotations

import gzip
import json
import time

import pytest
import torch

from specops.bench.conversations import DataFileError
from specops.bench.prompts import humaneval_path, load_prompts
from specops.draft.spec import RESULT_FILE, TrainSpec
from specops.draft.train import train_draft
from specops.runtime.engine import DecodingEngine
from specops.runtime.proposers import make_proposer
from specops.runtime.vocab import VocabularyMismatch, check_same_vocabulary

pytestmark = [pytest.mark.integration, pytest.mark.slow]

METHOD = {"eagle3": "eagle3", "eagle": "eagle", "medusa": "medusa", "distill": "draft-target"}


@pytest.fixture(scope="module")
def data_file(tmp_path_factory):
    """Eight HumanEval problems past the held-out ones, prompt + reference solution as completions."""
    with gzip.open(humaneval_path(), "rt") as fh:
        problems = [json.loads(line) for line in fh][100:108]
    path = tmp_path_factory.mktemp("data") / "data.jsonl"
    with path.open("w") as out:
        for p in problems:
            out.write(json.dumps({"id": p["task_id"], "text_format": "completion", "conversations": [
                {"role": "user", "content": p["prompt"]}, {"role": "assistant", "content": p["canonical_solution"]}]}) + "\n")
    return path


@pytest.fixture(scope="module")
def greedy(embedded_model):
    return DecodingEngine.load(embedded_model.path, "none", {})


def _spec(mode: str) -> TrainSpec:
    return TrainSpec(mode=mode, max_steps=2, batch_size=4, seq_len=128, draft_vocab_size=1024,
                     loss_vocab_size=1024, draft_layers=2, threads=2)


@pytest.mark.parametrize("mode", ["eagle3", "eagle", "medusa", "distill"])
def test_mode_trains_exports_and_serves_losslessly(mode, embedded_model, data_file, greedy, tmp_path):
    start = time.monotonic()
    result = train_draft(_spec(mode), 2, embedded_model.path, data_file, tmp_path, log=print)
    print(f"{mode}: trained {result.steps} steps in {result.train_seconds:.1f}s "
          f"(whole call {time.monotonic() - start:.1f}s)")
    assert result.steps == 2 and result.tokens > 500 and result.final_loss == result.final_loss
    assert json.loads((tmp_path / RESULT_FILE).read_text())["mode"] == mode
    engine = DecodingEngine(greedy.model, greedy.tokenizer,
                            make_proposer(METHOD[mode], {"draft_dir": str(result.export_dir), "num_speculative_tokens": 2}),
                            METHOD[mode])
    engine.proposer.bind(greedy.model, greedy.tokenizer)
    prompt = greedy.tokenizer(load_prompts("humaneval", limit=1)[0])["input_ids"]
    assert engine.generate_ids(prompt, 24, ignore_eos=True) == greedy.generate_ids(prompt, 24, ignore_eos=True)
    assert engine.counters.num_draft_tokens > 0


def test_eagle3_export_matches_modelopts_documented_layout(embedded_model, data_file, tmp_path):
    """The deployable EAGLE-3 checkpoint vLLM and TRT-LLM load (ModelOpt's export_speculative_decoding)."""
    from modelopt.torch.export.plugins.hf_spec_export import LLAMA_EAGLE_SINGLE_LAYER
    from safetensors.torch import load_file

    export = train_draft(_spec("eagle3"), 3, embedded_model.path, data_file, tmp_path, log=print).export_dir
    config = json.loads((export / "config.json").read_text())
    assert config["architectures"] == ["LlamaForCausalLMEagle3"]
    assert config["hidden_size"] == 576 and config["vocab_size"] == 49152 and config["draft_vocab_size"] == 1024
    assert config["num_hidden_layers"] == 1 and config["num_attention_heads"] == 9
    assert config["eagle_config"]["use_aux_hidden_state"] is True
    assert config["eagle_config"]["eagle_aux_hidden_state_layer_ids"] == [1, 14, 26]
    assert config["rope_theta"] == 100000.0
    weights = load_file(str(export / "model.safetensors"))
    names = {k.rsplit(".", 1)[0] for k in weights}
    assert names == LLAMA_EAGLE_SINGLE_LAYER["required"] | {"d2t", "lm_head"}
    assert weights["fc.weight"].shape == (576, 3 * 576)
    assert weights["layers.0.self_attn.q_proj.weight"].shape == (576, 2 * 576)  # embeddings + features
    assert weights["lm_head.weight"].shape == (1024, 576) and weights["d2t"].shape == (1024,)
    # d2t maps draft ids to target ids: distinct, in range, ascending.
    target_ids = torch.arange(1024) + weights["d2t"]
    assert target_ids.unique().numel() == 1024 and int(target_ids.max()) < 49152
    assert bool((target_ids[1:] > target_ids[:-1]).all())


@pytest.mark.parametrize("content,message", [
    ("", "empty"),
    ('{"id": "a", "text_format": "completion", "conversations": [{"role": "user", "content": "x"}, '
     '{"role": "assistant", "content": "y"}]}\n{"id": "b", "conversations": \n', "line 2"),
    ('{"id": "a", "conversations": [{"role": "robot", "content": "x"}]}\n', "line 1"),
])
def test_bad_data_is_refused_before_training(content, message, embedded_model, tmp_path):
    data = tmp_path / "bad.jsonl"
    data.write_text(content)
    with pytest.raises(DataFileError) as info:
        train_draft(_spec("eagle3"), 2, embedded_model.path, data, tmp_path / "out", log=print)
    assert str(data) in str(info.value) and message in str(info.value)
    assert not (tmp_path / "out").exists()


def test_foreign_tokenizer_is_refused(embedded_model, greedy, tmp_path):
    from transformers import AutoTokenizer

    other = AutoTokenizer.from_pretrained(str(embedded_model.path))
    other.add_tokens(["<not-in-the-target>"])
    other.save_pretrained(str(tmp_path))
    with pytest.raises(VocabularyMismatch, match="tokenizer differs from the target's"):
        check_same_vocabulary(tmp_path, greedy.tokenizer, greedy.model.config)
    (tmp_path / "config.json").write_text(json.dumps({"vocab_size": 32000}))
    with pytest.raises(VocabularyMismatch, match="vocab_size 32000 != target's 49152"):
        check_same_vocabulary(tmp_path, greedy.tokenizer, greedy.model.config)
