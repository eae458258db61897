"""Everything each shipped GPU profile renders and sends, against the field lists of the framework
version inside its image: model.json / model.yaml / extra-options keys, convert / build / launch /
trtllm-serve flags, fill_template keys, and the inputs of every request - specops' own and the ones
genai-perf generates (by its own input converter, for the exact command specops runs).
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

import specops.backends.trtllm.backend as trtllm_module
import specops.backends.trtllm.engine_commands as commands
from specops.backends import BACKENDS
from specops.backends.vllm.engine import VllmEngineBackend
from specops.bench.genai_perf_payload import payloads, requests
from specops.bench.genai_perf_tool import GenaiPerf
from specops.bench.sampling import planned
from specops.pipeline.backend import backend_for
from specops.pipeline.benchmark import bench_job
from specops.profile.loader import list_profile_names, load_profile
from specops.profile.workload import decided
from specops.run.variant import variants_of

GPU_PROFILES = [n for n in list_profile_names() if BACKENDS.get(load_profile(n).profile.backend.kind).needs_gpu]


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory) -> Path:
    """A word-level tokenizer: genai-perf only counts prompt tokens with it while building inputs."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"[UNK]": 0, **{w: i + 1 for i, w in enumerate("def return x y a b add if else for in".split())}}
    raw = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    raw.pre_tokenizer = pre_tokenizers.Whitespace()
    path = tmp_path_factory.mktemp("tokenizer")
    PreTrainedTokenizerFast(tokenizer_object=raw, unk_token="[UNK]").save_pretrained(path)
    return path


def _genai_perf_job(profile, backend, variant, tokenizer_dir: Path, tmp_path: Path):
    """The request genai-perf gets for the exact job a run gives it, with its input file written."""
    prompts = ["def add(a, b):", "return x if y else b"]  # the words of the tokenizer above
    workload = replace(decided(profile, planned(profile.benchmark)), prompts=prompts, categories=[None, None])
    job = bench_job(GenaiPerf(), backend, None, variant, tokenizer_dir, profile.benchmark, workload, tmp_path, 0)
    req = GenaiPerf().request(job)
    req.input_file.parent.mkdir(parents=True, exist_ok=True)
    req.input_file.write_text('{"text": "def add(a, b):"}\n{"text": "return x if y else b"}\n')
    return req


@pytest.fixture(scope="module")
def sent_by_genai_perf(tokenizer_dir, tmp_path_factory) -> dict[tuple[str, str], list[dict]]:
    """(profile, variant) -> the requests genai-perf builds for it: every GPU profile's, from one genai-perf
    child (~5 s of imports each, which made this module cost CI ~4 minutes)."""
    jobs = {}
    for name in GPU_PROFILES:
        profile = load_profile(name).profile
        for variant in variants_of(profile.method, profile.comparison.baseline):
            tmp = tmp_path_factory.mktemp(f"{name}-{variant.name}")
            jobs[(name, variant.name)] = _genai_perf_job(profile, backend_for(profile), variant, tokenizer_dir, tmp)
    return dict(zip(jobs, (requests(bodies) for bodies in payloads(list(jobs.values())))))


@pytest.mark.slow  # genai-perf builds every profile's inputs in a child process (the fixture)
@pytest.mark.parametrize("name", GPU_PROFILES)
def test_every_gpu_profile_renders_and_sends_only_what_its_version_accepts(name, sent_by_genai_perf):
    profile = load_profile(name).profile
    backend = backend_for(profile)
    for variant in variants_of(profile.method, profile.comparison.baseline):
        sent = {"genai-perf": sent_by_genai_perf[(name, variant.name)], "specops": [backend.own_request(variant)]}
        assert sent["genai-perf"] and all(sent["genai-perf"])
        assert backend.conformance(variant, sent) == [], (name, variant.name)


# --- the checks bite: each mutation below is what a wrong rendering or request would look like ------
def _one(name: str, overrides=()):
    profile = load_profile(name, list(overrides)).profile
    return profile, backend_for(profile), variants_of(profile.method, profile.comparison.baseline)[0]


def test_vllm_check_catches_keys_and_inputs_the_version_lacks(monkeypatch):
    profile, backend, variant = _one("eagle-vllm-nested")
    real = VllmEngineBackend.rendered_args
    monkeypatch.setattr(VllmEngineBackend, "rendered_args", lambda *a: real(*a) | {"speculative_model": "/d"}
                        | {"speculative_config": {**real(*a)["speculative_config"], "acceptance_method": "x"}})
    found = backend.conformance(variant, {"genai-perf": [{"text_input": "p", "min_length": 4,
                                                          "sampling_parameters": '{"max_tokens": 8, "top_n": 1}'}]})
    assert "model.json: 'speculative_model' is not an engine arg of vLLM 0.15.1" in found
    assert "speculative_config: 'acceptance_method' is not a SpeculativeConfig field of vLLM 0.15.1" in found
    assert "genai-perf: input 'min_length' is not declared by the served model" in found
    assert "genai-perf sampling_parameters: 'top_n' is not a SamplingParams field of vLLM 0.15.1" in found


def test_llmapi_check_catches_the_tutorials_spelling_on_trtllm_1_2(monkeypatch):
    profile, backend, variant = _one("eagle3-trtllm")
    real = trtllm_module.model_yaml

    def tutorial_spelling(*args):
        doc = real(*args)
        doc["speculative_config"] = {"decoding_type": "Eagle3", "max_draft_len": 3, "speculative_model": "hub/id"}
        return doc | {"pytorch_backend_config": {"use_cuda_graph": False}}

    monkeypatch.setattr(trtllm_module, "model_yaml", tutorial_spelling)
    found = backend.conformance(variant, {"specops": [{"text_input": "p", "sampling_param_min_tokens": 8,
                                                       "max_tokens": 8}]})
    assert "model.yaml: decoding_type 'Eagle3' is not accepted by TensorRT-LLM 1.2.1" in found
    assert "model.yaml: 'pytorch_backend_config' is not an LLM-API arg of TensorRT-LLM 1.2.1" in found
    assert "specops: input 'sampling_param_min_tokens' is not declared by the served model" in found
    assert not [f for f in found if "'max_tokens'" in f]  # declared by the addendum, knowingly unread


def test_serve_check_catches_unknown_options_flags_and_fields():
    profile, backend, variant = _one("draft-target-trtllm-serve",
                                     ("backend.llm_api_options.kv_cache_config.host_cache_size=1",))
    found = backend.conformance(variant, {"genai-perf": [{"model": "m", "prompt": "p", "min_p": 0.1}]})
    assert ("extra-llm-api-config.yml: kv_cache_config.host_cache_size is not a verified field of TensorRT-LLM "
            "1.2.0rc6") in found
    assert "genai-perf: 'min_p' is not a /v1/completions field specops knows is read" in found


def test_engine_check_catches_flags_keys_and_inputs_the_release_lacks(monkeypatch):
    profile, backend, variant = _one("eagle-trtllm-engine")
    real = commands.repository_parameters
    monkeypatch.setattr(commands, "repository_parameters",
                        lambda *a: {**real(*a),
                                    "preprocessing": {**real(*a)["preprocessing"], "tokenizer_type": "auto"}})
    found = backend.conformance(variant, {"specops": [{"text_input": "p", "return_perf_metrics": True}]})
    assert "fill_template preprocessing: 'tokenizer_type' is not a key of its template in v0.17.0" in found
    assert "specops: input 'return_perf_metrics' is not declared by the served model" in found


def test_engine_requests_ask_for_perf_metrics_only_where_the_release_has_them():
    _, v17, variant = _one("eagle-trtllm-engine")
    _, v19, _ = _one("eagle-trtllm-engine", ("backend.image=nvcr.io/nvidia/tritonserver:25.05-trtllm-python-py3",))
    assert "return_perf_metrics" not in v17.own_request(variant)
    assert v19.own_request(variant)["return_perf_metrics"] is True
    assert v19.conformance(variant, {"specops": [v19.own_request(variant)]}) == []
