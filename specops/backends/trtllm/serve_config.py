"""Config of the `trtllm-serve` backend: TensorRT-LLM's OpenAI-compatible server (PyTorch
backend) with an extra-llm-api-options YAML, as in NVIDIA's DGX Spark "Speculative Decoding"
playbook (NVIDIA/dgx-spark-playbooks nvidia/speculative-decoding/README.md)."""
from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator

from specops.backends.spec import FieldError
from specops.backends.trtllm.llmapi_config import LlmApiBackendConfig
from specops.backends.trtllm.llmapi_support import LlmApiSupport, check_llm_args, resolve, where
from specops.fields import Count, Real
from specops.versions.trtllm import trtllm_release

# trtllm-serve flags specops renders from the profile (the value flags of serve_argv).
FLAGS = ("host", "port", "backend", "tp_size", "max_batch_size", "max_num_tokens",
         "kv_cache_free_gpu_memory_fraction", "extra_llm_api_options")


class TrtllmServeBackendConfig(LlmApiBackendConfig):
    kind: Literal["trtllm-serve"] = "trtllm-serve"
    image_kinds: ClassVar = (("tensorrt-llm-release", None),)
    summary: ClassVar[str] = "trtllm-serve (TensorRT-LLM PyTorch backend, OpenAI API) with extra LLM API options"

    # 1.3.0rc12: the image of NVIDIA's current DGX Spark playbook, the newest release specops has facts for.
    image: str = Field("nvcr.io/nvidia/tensorrt-llm/release:1.3.0rc12",
                       description="a TensorRT-LLM release image, nvcr.io/nvidia/tensorrt-llm/release:<version>")
    port: Count | None = Field(None, ge=1, le=65535, description="trtllm-serve --port (default: a free port)")
    tp_size: Count = Field(1, ge=1, le=64, description="trtllm-serve --tp_size")
    max_batch_size: Count | None = Field(None, ge=1, description="trtllm-serve --max_batch_size")
    max_num_tokens: Count | None = Field(None, ge=1, description="trtllm-serve --max_num_tokens")
    kv_cache_free_gpu_memory_fraction: Real | None = Field(
        None, gt=0, le=1, description="trtllm-serve --kv_cache_free_gpu_memory_fraction")
    llm_api_options: dict[str, Any] = Field(
        default_factory=dict, description="the other top-level keys of the extra-llm-api-options YAML")
    enable_iter_perf_stats: bool = Field(
        True, description="add enable_iter_perf_stats: true so /metrics carries specDecodingStats (acceptance)")
    mount_root: str = Field("/models", pattern=r"^/", description="where target/ and draft/ appear in the container")
    config_mount: str = Field("/config", description="where the rendered YAML appears in the container")
    shm_size: str | None = Field(None, description="docker --shm-size (the playbook sets none; it shares the host IPC)")
    ipc: Literal["host"] | None = Field("host", description="docker --ipc (the playbook: --ipc=host)")
    pre_serve: list[str] = Field(default_factory=list,
                                 description="shell lines run in the container before trtllm-serve")
    extra_args: list[str] = Field(default_factory=list, description="more trtllm-serve arguments, verbatim")

    @field_validator("llm_api_options")
    @classmethod
    def _options(cls, value: dict[str, Any]) -> dict[str, Any]:
        if "speculative_config" in value:
            raise ValueError("speculative_config is written by specops from the method; set decoding_type/"
                             "speculative_model_key instead")
        return value

    @classmethod
    def has_facts(cls, version: str) -> bool:
        return trtllm_release(version) is not None

    def resolve(self, method) -> LlmApiSupport:
        support = resolve(self, method)
        release = support.release
        flags = {f"--{f}" for f in FLAGS} | {a.split("=", 1)[0] for a in self.extra_args if a.startswith("--")}
        unknown = sorted(flags - release.serve_flags)
        if unknown:
            raise FieldError("backend.extra_args" if set(unknown) - {f"--{f}" for f in FLAGS} else "backend.image",
                              f"trtllm-serve of {where(release)} (image {self.image}) has no flag {', '.join(unknown)}")
        options = set(self.llm_api_options) | ({"enable_iter_perf_stats"} if self.enable_iter_perf_stats else set())
        check_llm_args(release, options, "backend.llm_api_options", self.image)
        return support
