"""trtllm-serve profiles and rendering against the seed: NVIDIA's DGX Spark "Speculative
Decoding" playbook, https://github.com/NVIDIA/dgx-spark-playbooks/blob/main/nvidia/speculative-decoding/README.md
(commit 2022e2b, "Last Updated: 04/20/2026", container 1.3.0rc12), Option 1 (EAGLE-3) and
Option 2 (Draft Target). The YAML documents below are the playbook's, written down verbatim.
"""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from specops.backends.base import Variant
from specops.backends.trtllm_serve import TrtllmServeBackend, render_yaml, serve_argv, speculative_config
from specops.backends.trtllm_serve_config import TrtllmServeBackendConfig
from specops.methods import METHODS
from specops.profile.loader import read_document
from specops.profile.schema import Serving

PROFILES = Path(__file__).resolve().parents[3] / "profiles"
SEED_IMAGE = "nvcr.io/nvidia/tensorrt-llm/release:1.3.0rc12"

SEED_EAGLE3_YAML = """
enable_attention_dp: false
disable_overlap_scheduler: false
enable_autotuner: false
cuda_graph_config:
    max_batch_size: 1
speculative_config:
    decoding_type: Eagle
    max_draft_len: 5
    speculative_model_dir: /opt/gpt-oss-120b-Eagle3/

kv_cache_config:
    free_gpu_memory_fraction: 0.9
    enable_block_reuse: false
"""
SEED_DRAFT_TARGET_YAML = """
print_iter_log: false
disable_overlap_scheduler: true
speculative_config:
  decoding_type: DraftTarget
  max_draft_len: 4
  speculative_model_dir: /opt/Llama-3.1-8B-Instruct-FP4/
kv_cache_config:
  enable_block_reuse: false
"""


def _load(name: str):
    doc = read_document(PROFILES / f"{name}.yaml")
    return doc, TrtllmServeBackendConfig(**doc["backend"]), METHODS.get(doc["method"]["kind"])(**doc["method"])


def _expected(seed_yaml: str, cfg: TrtllmServeBackendConfig) -> dict:
    doc = yaml.safe_load(seed_yaml)
    doc["speculative_config"]["speculative_model_dir"] = f"{cfg.models_mount}/draft"  # our mount, not /opt/...
    return doc | {"enable_iter_perf_stats": True}


@pytest.mark.parametrize("name,seed_yaml,target,draft", [
    ("eagle3-trtllm-serve", SEED_EAGLE3_YAML, "hf://openai/gpt-oss-120b", "hf://nvidia/gpt-oss-120b-Eagle3-long-context"),
    ("draft-target-trtllm-serve", SEED_DRAFT_TARGET_YAML, "hf://nvidia/Llama-3.3-70B-Instruct-FP4",
     "hf://nvidia/Llama-3.1-8B-Instruct-FP4"),
])
def test_profile_matches_the_playbook(name, seed_yaml, target, draft):
    doc, cfg, method = _load(name)
    assert (doc["target"]["source"], doc["draft"]["source"]) == (target, draft)
    assert cfg.image == SEED_IMAGE
    rendered = yaml.safe_load(render_yaml(cfg, method))
    expected = _expected(seed_yaml, cfg)
    assert rendered == expected
    assert list(rendered) == list(expected)  # the playbook's key order
    argv = serve_argv(cfg)
    assert argv[:2] == ["trtllm-serve", "/models/target"]
    flags = {argv[i]: argv[i + 1] for i in range(2, len(argv) - 1) if argv[i].startswith("--")}
    assert flags["--backend"] == "pytorch" and flags["--tp_size"] == "1" and flags["--max_batch_size"] == "1"
    assert flags["--host"] == "127.0.0.1" and flags["--port"] == "8000"
    assert flags["--extra_llm_api_options"] == "/config/extra-llm-api-config.yml"
    if name == "draft-target-trtllm-serve":
        assert flags["--kv_cache_free_gpu_memory_fraction"] == "0.9"


def test_base_variant_yaml_has_no_speculation():
    _, cfg, _ = _load("eagle3-trtllm-serve")
    rendered = yaml.safe_load(render_yaml(cfg, METHODS.get("none")()))
    assert "speculative_config" not in rendered and rendered["kv_cache_config"]["enable_block_reuse"] is False


def test_default_decoding_types_follow_the_llm_api():
    cfg = TrtllmServeBackendConfig(image=SEED_IMAGE)
    assert speculative_config(cfg, METHODS.get("eagle3")(num_speculative_tokens=3), "/d")["decoding_type"] == "Eagle3"
    assert speculative_config(cfg, METHODS.get("draft-target")(), "/d")["decoding_type"] == "DraftTarget"
    ngram = speculative_config(cfg, METHODS.get("ngram")(prompt_lookup_min=1, prompt_lookup_max=3), "/d")
    assert ngram == {"decoding_type": "NGram", "max_draft_len": 4, "max_matching_ngram_size": 3}
    with pytest.raises(ValueError, match="prompt_lookup_min: 1"):
        speculative_config(cfg, METHODS.get("ngram")(), "/d")
    with pytest.raises(ValueError):
        speculative_config(cfg, METHODS.get("medusa")(), "/d")


def test_config_refuses_secrets_and_a_hand_written_speculative_config():
    with pytest.raises(ValueError, match="HF_TOKEN"):
        TrtllmServeBackendConfig(image=SEED_IMAGE, env={"HF_TOKEN": "x"})
    with pytest.raises(ValueError, match="speculative_config"):
        TrtllmServeBackendConfig(image=SEED_IMAGE, llm_api_options={"speculative_config": {}})
    TrtllmServeBackendConfig(image=SEED_IMAGE, env={"TIKTOKEN_ENCODINGS_BASE": "/tmp/harmony-reqs"})


def _backend(name: str):
    doc, cfg, method = _load(name)
    profile = SimpleNamespace(name=name, backend=cfg, method=method, serving=Serving(),
                              draft=SimpleNamespace(source=doc["draft"]["source"]))
    return TrtllmServeBackend(profile), method


def test_bench_target_is_the_openai_completions_endpoint():
    backend, method = _backend("draft-target-trtllm-serve")
    target = backend.bench_target(None, Variant("speculative", method))
    assert (target.endpoint_type, target.url, target.backend) == ("completions", "http://127.0.0.1:8000", None)


def test_container_flags_match_the_playbook(tmp_path):
    backend, method = _backend("eagle3-trtllm-serve")
    spec = backend._spec(Variant("speculative", method), tmp_path, tmp_path / "t", tmp_path / "d")
    # docker run ... --ulimit memlock=-1 --ulimit stack=67108864 --gpus=all --ipc=host --network host -e HF_TOKEN
    assert spec.gpus == "all" and spec.ipc_mode == "host" and spec.network_mode == "host"
    assert {u.name: u.soft for u in spec.ulimits} == {"memlock": -1, "stack": 67108864}
    assert spec.secret_env == ("HF_TOKEN",) and "HF_TOKEN" not in spec.env
    assert spec.env == {"TIKTOKEN_ENCODINGS_BASE": "/tmp/harmony-reqs"}
    assert spec.command[:2] == ["bash", "-c"] and "exec trtllm-serve /models/target" in spec.command[2]
    assert "o200k_base.tiktoken" in spec.command[2] and "cl100k_base.tiktoken" in spec.command[2]


def test_render_writes_the_yaml_and_the_mounts(tmp_path):
    from specops.sources.base import ModelArtifact

    backend, method = _backend("draft-target-trtllm-serve")
    backend.render(Variant("speculative", method), ModelArtifact(tmp_path / "t", "hf://x", ""),
                   ModelArtifact(tmp_path / "d", "hf://y", ""), tmp_path / "repo")
    assert yaml.safe_load((tmp_path / "repo" / "extra-llm-api-config.yml").read_text())["speculative_config"]
    assert (tmp_path / "repo" / "specops-mounts.json").is_file()
