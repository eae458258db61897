"""Config of the `trtllm-engine` backend: checkpoint conversion, `trtllm-build`, and the
inflight_batcher_llm repository filled by the container's `fill_template.py`.

Defaults are the Triton tutorial's engine recipe (triton-inference-server/tutorials@f6fd598,
Feature_Guide/Speculative_Decoding/TRT-LLM/README.md): fp16, max_batch_size 4, decoupled off,
queue delay 10000, logits TYPE_FP32. Recipe-specific build flags live in the profiles.
"""
from __future__ import annotations

import re
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from specops.backends.container.config import ContainerBackendConfig
from specops.backends.trtllm.engine_support import EngineSupport, resolve
from specops.fields import Count, Real, Seconds
from specops.versions.engine import engine_release

# trtllm-build flags specops sets itself; a profile may not override them through build flags.
OWNED_BUILD_FLAGS = frozenset({
    "checkpoint_dir", "output_dir", "speculative_decoding_mode", "max_draft_len", "max_batch_size",
    "max_input_len", "max_seq_len",
})


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Mount(_Section):
    """Where the container sees engines and the repository (host paths come from the run)."""

    engines: str = Field("/engines", description="converted checkpoints and engines (the cached build output)")
    repository: str = Field("/opt/tritonserver/inflight_batcher_llm", description="the model repository (the "
                            "tutorial's MODEL_FOLDER)")


class TritonParams(_Section):
    """Values of the fill_template parameter sets (tutorial names in comments)."""

    decoupled_mode: bool = Field(False, description="stream responses (DECOUPLED_MODE)")
    instance_count: Count = Field(1, ge=1, le=64, description="instances of preprocessing, postprocessing and BLS "
                                  "(INSTANCE_COUNT)")
    max_queue_delay_microseconds: Count = Field(10000, ge=0, description="the batcher's queue delay (the tutorial's "
                                                "MAX_QUEUE_DELAY_MS=10000, passed as is)")
    triton_backend: Literal["tensorrtllm", "python"] = Field("tensorrtllm", description="TRITON_BACKEND of the "
                                                             "tensorrt_llm model")
    batching_strategy: Literal["inflight_fused_batching", "V1"] = Field("inflight_fused_batching",
                                                                        description="the engine's batching")
    logits_datatype: Literal["TYPE_FP32", "TYPE_FP16", "TYPE_BF16"] = Field("TYPE_FP32", description="LOGITS_DATATYPE")
    encoder_input_features_data_type: str = Field("TYPE_FP16", description="ENCODER_INPUT_FEATURES_DATA_TYPE")
    kv_cache_free_gpu_mem_fraction: Real | None = Field(None, gt=0, le=1, description="share of free GPU memory for "
                                                        "the KV cache; unset: the template's")
    extra: dict[str, dict[str, str]] = Field(default_factory=dict,
                                             description="more keys per model, e.g. "
                                                         "{tensorrt_llm: {max_beam_width: '1'}}")


class TrtllmEngineBackendConfig(ContainerBackendConfig):
    kind: Literal["trtllm-engine"] = "trtllm-engine"
    framework: ClassVar[str] = "tensorrt-llm"
    image_kinds: ClassVar = (("tritonserver", "trtllm-python-py3"),)
    summary: ClassVar[str] = "TensorRT-LLM engines (convert_checkpoint + trtllm-build) on Triton inflight_batcher_llm"

    # 25.01 (TensorRT-LLM 0.17.0) is the oldest image the tutorial allows; its tensorrtllm_backend
    # (v0.17.0) was read at the tag, and the tutorial's fill_template.py lines run there as written.
    image: str = Field("nvcr.io/nvidia/tritonserver:25.01-trtllm-python-py3",
                       description="a -trtllm-python-py3 Triton image (the tutorial asks for >= 25.01)")
    app_dir: str = Field("/app", description="where the image keeps examples/, tools/, scripts/, all_models/")
    dtype: Literal["float16", "bfloat16", "float32"] = Field("float16", description="convert_checkpoint --dtype")
    tp_size: Count = Field(1, ge=1, le=64, description="tensor parallel size (convert --tp_size, launch --world_size)")
    max_batch_size: Count = Field(4, ge=1, le=4096,
                                  description="trtllm-build --max_batch_size and triton_max_batch_size")
    max_input_len: Count | None = Field(None, ge=1, description="trtllm-build --max_input_len (unset: its default)")
    max_seq_len: Count | None = Field(None, ge=1, description="trtllm-build --max_seq_len (unset: its default)")
    max_draft_len: Count | None = Field(
        None, ge=1, le=1024,
        description="EAGLE: convert --max_draft_len (draft tree size; unset: convert_checkpoint's default, 63); "
                    "medusa: trtllm-build --max_draft_len when set; draft-target uses the method's "
                    "num_speculative_tokens")
    max_non_leaves_per_layer: Count | None = Field(None, ge=1, description="EAGLE convert --max_non_leaves_per_layer")
    eagle_choices: list[list[Count]] | None = Field(None,
                                                    description="EAGLE-1 tree; default: the backend's mc_sim_7b_63")
    base_convert_example: Literal["llama"] = Field(
        "llama", description="the convert_checkpoint.py example for base and draft models (its path follows the "
                             "image's TensorRT-LLM: examples/llama, later examples/models/core/llama)")
    build_flags: dict[str, str] = Field(default_factory=dict,
                                        description="trtllm-build flags of the speculative engine")
    base_build_flags: dict[str, str] = Field(default_factory=dict, description="trtllm-build flags of the base engine")
    draft_build_flags: dict[str, str] = Field(default_factory=dict,
                                              description="trtllm-build flags of the draft engine")
    triton: TritonParams = Field(TritonParams(), description="the model repository's fill_template values")
    mounts: Mount = Field(Mount(), description="where the container sees engines and the repository")
    build_timeout_s: Seconds = Field(7200, gt=0, description="bound on convert + trtllm-build in the container")

    @field_validator("build_flags", "base_build_flags", "draft_build_flags")
    @classmethod
    def _flags(cls, value: dict[str, str]) -> dict[str, str]:
        for key in value:
            if not re.fullmatch(r"[a-z][a-z0-9_]*", key):
                raise ValueError(f"build flag {key!r}: write it without dashes, e.g. gemm_plugin")
            if key in OWNED_BUILD_FLAGS:
                raise ValueError(f"build flag {key!r} is set by specops from the profile's own fields")
        return value

    @classmethod
    def has_facts(cls, version: str) -> bool:
        release = engine_release(version)
        return release is not None and release.servable

    def resolve(self, method) -> EngineSupport:
        return resolve(self, method)

    @property
    def fill_template_script(self) -> str:
        return f"{self.app_dir}/tools/fill_template.py"

    @property
    def launch_script(self) -> str:
        return f"{self.app_dir}/scripts/launch_triton_server.py"

    @property
    def all_models(self) -> str:
        return f"{self.app_dir}/all_models/inflight_batcher_llm"
