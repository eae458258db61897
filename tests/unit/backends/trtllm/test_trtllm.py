"""Backend `trtllm` (LLM API): model.yaml spelled for the TensorRT-LLM inside each image, refusals at
load naming the versions, genai-perf inputs, perf-metrics parsing, acceptance, plan.

Seed: triton-inference-server/tutorials@4fe2b90 Feature_Guide/Speculative_Decoding/TRT-LLM (LLM API /
PyTorch backend): Llama-3.1-8B-Instruct + yuhuili/EAGLE3-LLaMA3.1-Instruct-8B, max_draft_len 3; draft/target
max_draft_len 3; docker run --rm -it --net host --shm-size=2g --ulimit memlock=-1
--ulimit stack=67108864 --gpus all -v ~/.cache/huggingface:/root/.cache/huggingface.
Version facts: specops/versions/data/trtllm.yaml.
"""
from __future__ import annotations

from pathlib import Path

import genai_perf.inputs.converters.tensorrtllm_converter as trt_converter
import numpy as np
import pytest
import yaml

from specops.acceptance.trtllm_perf_metrics import parse_perf_metrics
from specops.backends.trtllm.backend import (
    GENAI_PERF_INPUTS,
    MODEL,
    LlmApiServer,
    acceptance_from,
    benchmark_inputs,
    config_addendum,
)
from specops.bench.genai_perf_tool import GenaiPerf
from specops.bench.sampling import planned
from specops.pipeline.backend import backend_for
from specops.pipeline.benchmark import bench_job
from specops.pipeline.plan import format_plan
from specops.profile.errors import ProfileError
from specops.profile.loader import load_profile
from specops.profile.workload import decided
from specops.run.variant import Variant, variants_of
from specops.triton.model_config import parse_pbtxt
from tests.reference import REFERENCE

LLMAPI = REFERENCE / "tensorrtllm_backend" / "llmapi" / "tensorrt_llm"
IMAGE = "nvcr.io/nvidia/tritonserver:{}-trtllm-python-py3"


def _files(profile, variant_name="speculative"):
    variant = {v.name: v for v in variants_of(profile.method, profile.comparison.baseline)}[variant_name]
    return backend_for(profile).all_files(variant, None, None)


def _model_yaml(profile, variant_name="speculative") -> dict:
    return yaml.safe_load(_files(profile, variant_name)[f"{MODEL}/1/model.yaml"])


def test_model_yaml_keys_match_the_llmapi_template(load_gpu_profile):
    ref = yaml.safe_load((LLMAPI / "1" / "model.yaml").read_text())
    ours = _model_yaml(load_gpu_profile("eagle3-trtllm"))
    # pytorch_backend_config (use_cuda_graph) is left out on purpose: TRT-LLM >= 1.0 rejects it
    # (data/trtllm.yaml llm_args_absent).
    assert set(ref) - {"pytorch_backend_config"} <= set(ours)
    assert ours["backend"] == ref["backend"] == "pytorch"
    assert ours["triton_config"] == {"max_batch_size": 0, "decoupled": False}
    assert list(ours)[:4] == ["model", "backend", "tensor_parallel_size", "pipeline_parallel_size"]


def test_tutorial_eagle3_is_spelled_for_trtllm_1_2_1(load_gpu_profile):
    """The tutorial writes Eagle3 + speculative_model (TRT-LLM >= 1.3.0rc0); the 26.04 image ships 1.2.1,
    which parses Eagle (EAGLE-3 heads on the PyTorch backend) and a local speculative_model_dir."""
    ours = _model_yaml(load_gpu_profile("eagle3-trtllm"))
    assert ours["model"] == "meta-llama/Llama-3.1-8B-Instruct"  # the target by hub id: the LLM API downloads it
    assert ours["speculative_config"] == {"decoding_type": "Eagle", "max_draft_len": 3,
                                          "speculative_model_dir": "/hf-models/EAGLE3-LLaMA3.1-Instruct-8B"}
    mounts = yaml.safe_load(_files(load_gpu_profile("eagle3-trtllm"))["specops-container.json"])["mounts"]
    assert mounts == [["<draft checkpoint from the download step>", "/hf-models/EAGLE3-LLaMA3.1-Instruct-8B"]]


@pytest.mark.parametrize("profile_name, overrides, expected", [
    ("draft-target-trtllm", (), {"decoding_type": "DraftTarget", "max_draft_len": 3,
                                 "speculative_model_dir": "/hf-models/Llama-3.2-1B-Instruct"}),
    ("eagle3-trtllm", (f"backend.image={IMAGE.format('25.12')}",),
     {"decoding_type": "Eagle", "max_draft_len": 3, "speculative_model_dir": "/hf-models/EAGLE3-LLaMA3.1-Instruct-8B"}),
    ("eagle3-trtllm", ("method={kind: ngram, num_speculative_tokens: 4, prompt_lookup_max: 3}", "draft=null"),
     {"decoding_type": "NGram", "max_draft_len": 4, "max_matching_ngram_size": 3}),
])
def test_speculative_config_per_method(load_gpu_profile, profile_name, overrides, expected):
    assert _model_yaml(load_gpu_profile(profile_name, overrides))["speculative_config"] == expected


def test_base_variant_omits_speculative_config(load_gpu_profile):
    # Tutorial step "Run Gen-AI Perf on Base Model": the same model.yaml without speculative_config.
    ours = _model_yaml(load_gpu_profile("eagle3-trtllm"), "base")
    assert "speculative_config" not in ours and ours["model"] == "meta-llama/Llama-3.1-8B-Instruct"


@pytest.mark.parametrize("overrides, field, needles", [
    # the tutorial's spellings on the image the profile pins: refused with the versions that have them
    (("backend.decoding_type=Eagle3",), "backend.decoding_type",
     ["TensorRT-LLM 1.2.1", IMAGE.format("26.04"), "first in TensorRT-LLM 1.3.0rc12"]),
    (("backend.speculative_model_key=speculative_model",), "backend.speculative_model_key",
     ["TensorRT-LLM 1.2.1", "speculative_model first in TensorRT-LLM 1.3.0rc12"]),
    (("method.kind=draft-target", "backend.decoding_type=Draft_Target"), "backend.decoding_type",
     ["accepts decoding_type", "first in TensorRT-LLM 1.3.0rc12"]),
    (("method={kind: ngram, prompt_lookup_min: 2}", "draft=null"), "method.prompt_lookup_min",
     ["max_matching_ngram_size down to 1"]),
    # an LLM-API arg newer than the image (1.1.0's list is complete): refused with its first version
    ((f"backend.image={IMAGE.format('25.12')}", "backend.llm_args={env_overrides: {}}"), "backend.llm_args",
     ["TensorRT-LLM 1.1.0", "'env_overrides'", "first in TensorRT-LLM 1.2.0rc6"]),
    (("backend.llm_args={pytorch_backend_config: {use_cuda_graph: false}}",), "backend.llm_args",
     ["no LLM-API arg 'pytorch_backend_config'"]),
    (("backend.image=registry.local/tritonserver:26.09-trtllm-python-py3",), "backend.image",
     ["specops knows the framework versions of", "framework_version", "26.04-trtllm-python-py3"]),
])
def test_what_the_image_cannot_run_is_refused_at_load(load_gpu_profile, overrides, field, needles):
    with pytest.raises(ProfileError) as err:
        load_gpu_profile("eagle3-trtllm", overrides)
    assert [f for f, _ in err.value.problems] == [field], err.value
    for needle in needles:
        assert needle in str(err.value), (needle, str(err.value))


def test_an_image_the_matrix_does_not_know_is_checked_against_the_version_it_declares(load_gpu_profile):
    mirror = ("backend.image=registry.local/tritonserver:26.04-trtllm-python-py3", "backend.framework_version=1.2.1")
    assert _model_yaml(load_gpu_profile("eagle3-trtllm", mirror))["speculative_config"]["decoding_type"] == "Eagle"
    with pytest.raises(ProfileError, match="no Triton llmapi model facts for TensorRT-LLM 1.3.0rc12"):
        load_gpu_profile("eagle3-trtllm", (mirror[0], "backend.framework_version=1.3.0rc12"))
    with pytest.raises(ProfileError, match=r"ships tensorrt-llm 1.2.1 .*not 1.1.0"):
        load_gpu_profile("eagle3-trtllm", ("backend.framework_version=1.1.0",))


@pytest.mark.parametrize("method", ["medusa", "eagle"])
def test_medusa_and_eagle1_refused_at_validation_pointing_to_trtllm_engine(load_gpu_profile, method):
    with pytest.raises(ProfileError, match=r"not supported by backend 'trtllm'.*trtllm-engine"):
        load_gpu_profile("eagle3-trtllm", (f"method.kind={method}",))


def test_genai_perf_inputs_are_declared_by_template_plus_addendum():
    # genai-perf 0.0.16 TensorRTLLMConverter payload keys (installed package source).
    source = Path(trt_converter.__file__).read_text()
    sent = {"max_tokens", "exclude_input_in_output", "stream", "min_length"}
    assert all(f'"{k}"' in source for k in sent)
    template = parse_pbtxt((LLMAPI / "config.pbtxt").read_text())
    assert not sent & {i.name for i in template.input}  # the mismatch the addendum exists for
    combined = parse_pbtxt((LLMAPI / "config.pbtxt").read_text() + config_addendum(decoupled=True))
    names = [i.name for i in combined.input]
    assert sent <= set(names) and len(names) == len(set(names))
    assert {n for n, _ in GENAI_PERF_INPUTS} == sent
    assert combined.model_transaction_policy.decoupled and combined.name == "tensorrt_llm"


def test_benchmark_inputs_feed_the_sampling_params_model_py_reads(load_gpu_profile):
    profile = load_gpu_profile("eagle3-trtllm", ("benchmark.output_tokens=256",))
    backend = backend_for(profile)
    variant = variants_of(profile.method, profile.comparison.baseline)[0]
    read = backend.support(variant).release.llmapi.inputs_read
    workload = decided(profile, planned(profile.benchmark))
    job = bench_job(GenaiPerf(), backend, None, variant, "tok", profile.benchmark, workload, Path("/r"), 0)
    sent = GenaiPerf().request(job).extra_inputs
    assert sent["sampling_param_max_tokens"] == 256 and set(sent) <= read
    assert set(benchmark_inputs(profile.backend)) <= read
    streaming = benchmark_inputs(load_gpu_profile("eagle3-trtllm", ("backend.decoupled=true",)).backend)
    assert streaming["streaming"] is True


def test_report_says_the_output_length_is_not_pinned(load_gpu_profile):
    profile = load_gpu_profile("eagle3-trtllm")
    notes = backend_for(profile).benchmark_notes(variants_of(profile.method, True)[0])
    assert len(notes) == 1 and notes[0].startswith(f"output length not pinned on {IMAGE.format('26.04')}")


def test_perf_metrics_parsed_from_the_documented_shapes():
    # Shapes from upstream triton_backend/all_models/llmapi/tensorrt_llm/config.pbtxt (TRT-LLM):
    # acceptance_rate TYPE_FP32 [1], total_accepted_draft_tokens / total_draft_tokens TYPE_INT32 [1];
    # model.py builds them with the text_output dtype, so they arrive as strings ("total_draft_tokens": "0").
    numeric = {"text_output": np.array([b"x"], dtype=object), "acceptance_rate": np.array([0.5], np.float32),
               "total_accepted_draft_tokens": np.array([6], np.int32), "total_draft_tokens": np.array([12], np.int32)}
    strings = {"total_accepted_draft_tokens": np.array([b"4"], dtype=object),
               "total_draft_tokens": np.array([b"6"], dtype=object)}
    assert parse_perf_metrics(numeric) == (6.0, 12.0)
    assert parse_perf_metrics(strings) == (4.0, 6.0)
    assert parse_perf_metrics({"text_output": np.array([b"x"], dtype=object)}) is None
    acc = acceptance_from([(6.0, 12.0), (4.0, 6.0)], max_draft_len=3)
    assert (acc.num_drafts, acc.num_draft_tokens, acc.num_accepted_tokens) == (6.0, 18.0, 10.0)
    assert "return_perf_metrics" in acc.source and "2 check requests" in acc.source and not acc.covers_benchmark


def test_zero_perf_metrics_report_acceptance_unavailable_with_the_known_cause(load_gpu_profile):
    """TRT-LLM's PyTorch backend returns zero speculative perf fields before PR #17082 (data/trtllm.yaml)."""
    profile = load_gpu_profile("eagle3-trtllm")
    backend, variant = backend_for(profile), variants_of(profile.method, profile.comparison.baseline)[0]
    server = LlmApiServer(None, None, Path("log"), profile.backend.image, 1.0, None, perf=[(0.0, 0.0), (0.0, 0.0)])
    acc = backend.acceptance(server, variant)
    assert not acc.available and acc.source.startswith(f"acceptance unavailable on {IMAGE.format('26.04')}")
    assert "PR #17082" in acc.source
    server.perf = [(6.0, 12.0)]
    assert backend.acceptance(server, variant).num_accepted_tokens == 6.0
    assert backend.acceptance(server, variants_of(profile.method, profile.comparison.baseline)[1]) is None  # the base variant drafts nothing


def test_profiles_carry_the_seed_values(load_gpu_profile):
    eagle3, dt = load_gpu_profile("eagle3-trtllm"), load_gpu_profile("draft-target-trtllm")
    assert (eagle3.target.source, eagle3.draft.source) == ("hf://meta-llama/Llama-3.1-8B-Instruct",
                                                           "hf://yuhuili/EAGLE3-LLaMA3.1-Instruct-8B")
    assert dt.target.source == "hf://meta-llama/Llama-3.1-8B-Instruct"
    assert eagle3.method.num_speculative_tokens == dt.method.num_speculative_tokens == 3
    for profile in (eagle3, dt):
        assert (profile.backend.tensor_parallel_size, profile.backend.pipeline_parallel_size) == (1, 1)
        steps = backend_for(profile).plan(Variant("speculative", profile.method), None, None)
        line = next(s for s in steps if s.step == "serve").commands[0]
        for flag in ("--network host", "--shm-size=2g", "--ulimit memlock=-1", "--ulimit stack=67108864",
                     "--gpus all", ":/root/.cache/huggingface", "cp -R /app/all_models/llmapi/ "
                     "/opt/tritonserver/llmapi_repo/", "python3 /app/scripts/launch_triton_server.py",
                     "--model_repo=/opt/tritonserver/llmapi_repo/"):
            assert flag in line, flag


def test_tritonserver_is_bound_to_the_serving_address(load_gpu_profile):
    """launch_triton_server.py has no address flag; its --tritonserver binary is specops' wrapper."""
    profile = load_gpu_profile("eagle3-trtllm")
    files = _files(profile)
    wrapper = files["specops-tritonserver"]
    assert "--http-address=127.0.0.1 --grpc-address=127.0.0.1 --metrics-address=127.0.0.1" in wrapper
    steps = backend_for(profile).plan(Variant("speculative", profile.method), None, None)
    line = next(s for s in steps if s.step == "serve").commands[0]
    assert "--tritonserver=/tmp/specops-tritonserver" in line and "install -m 0755" in line


def test_plan_lists_the_docker_line_in_container_steps_and_files(load_gpu_profile):
    profile = load_gpu_profile("draft-target-trtllm")
    steps = backend_for(profile).plan(Variant("speculative", profile.method), None, None)
    files = {k: v for s in steps for k, v in s.files.items()}
    assert "decoding_type: DraftTarget" in files["repository/tensorrt_llm/1/model.yaml"]
    assert "repository/specops-config-addendum.pbtxt" in files
    commands = [c for s in steps for c in s.commands]
    serve = next(s for s in steps if s.step == "serve").commands
    assert serve[0].startswith("docker run") and "nvcr.io/nvidia/tritonserver:" in serve[0]
    assert any(c.startswith("(in container) cp -R /app/all_models/llmapi/") for c in commands)


def test_plan_benchmark_sends_the_output_length_as_the_sampling_param_model_py_reads():
    text = format_plan(load_profile("draft-target-trtllm", ["benchmark.output_tokens=77"]))
    bench = next(line for line in text.splitlines() if "genai-perf profile" in line)
    assert "--backend tensorrtllm" in bench and '"sampling_param_max_tokens": 77' in bench


def test_the_container_resolves_hub_ids_in_specops_hub_cache(load_gpu_profile, tmp_path, monkeypatch):
    """LLM-API profiles name the target by hub id and mount the tutorial's ~/.cache/huggingface: the server
    container's hub cache is specops' <cache>/hf, where the download step already put the snapshot, so
    TensorRT-LLM finds it there instead of downloading the target a second time."""
    from specops.backends.container.backend import HF_CACHE_IN_CONTAINER, HF_HUB_IN_CONTAINER

    monkeypatch.setenv("SPECOPS_CACHE", str(tmp_path / "cache"))
    profile = load_gpu_profile("eagle3-trtllm")
    backend = backend_for(profile)
    spec = backend.server_spec(Variant("speculative", profile.method), "/repo", [], backend.plan_endpoint())
    mounts = {m.target: str(m.source) for m in spec.mounts}
    assert mounts[HF_HUB_IN_CONTAINER] == str(tmp_path / "cache" / "hf")  # fetch_hf's snapshot_download cache_dir
    assert HF_CACHE_IN_CONTAINER in mounts  # the rest of the tutorial's HF home
    assert spec.env["HF_HUB_CACHE"] == HF_HUB_IN_CONTAINER
    build = backend.spec(["true"], [], {}, secrets=False)  # one-shot steps read mounted checkpoints only
    assert not build.mounts and "HF_HUB_CACHE" not in build.env
