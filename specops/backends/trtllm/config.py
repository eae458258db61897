"""Config of the `trtllm` backend: the TRT-LLM LLM-API (PyTorch) Triton model, `-trtllm-python-py3`.

Light on purpose (the profile loader imports it): no tritonclient, no docker.
"""
from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator

from specops.backends.spec import FieldError, reject_owned_keys
from specops.backends.trtllm.llmapi_config import LlmApiBackendConfig
from specops.backends.trtllm.llmapi_support import LlmApiSupport, check_llm_args, resolve
from specops.fields import Count
from specops.versions.trtllm import trtllm_release

OWNED_KEYS = frozenset({"model", "backend", "tensor_parallel_size", "pipeline_parallel_size",
                        "speculative_config", "triton_config"})


class TrtllmBackendConfig(LlmApiBackendConfig):
    kind: Literal["trtllm"] = "trtllm"
    image_kinds: ClassVar = (("tritonserver", "trtllm-python-py3"),)
    summary: ClassVar[str] = "TRT-LLM LLM API (PyTorch) Triton model in the -trtllm-python-py3 container"

    # 26.04 ships TensorRT-LLM 1.2.1 (the newest LLM API a tritonserver image carries, NVIDIA's
    # compatibility matrix) and was the latest container when the Triton tutorial was written.
    image: str = Field("nvcr.io/nvidia/tritonserver:26.04-trtllm-python-py3",
                       description="Triton container with TensorRT-LLM (tutorial: >= 25.01)")
    tensor_parallel_size: Count = Field(1, ge=1, le=64, description="the LLM API's tensor_parallel_size")
    pipeline_parallel_size: Count = Field(1, ge=1, le=64, description="the LLM API's pipeline_parallel_size")
    llm_args: dict[str, Any] = Field(default_factory=dict, description="more LLM API args for model.yaml, verbatim")
    max_batch_size: Count = Field(0, ge=0, description="triton_config.max_batch_size (0: the template's value)")
    decoupled: bool = Field(False, description="triton_config.decoupled; True lets genai-perf stream (TTFT/ITL)")
    perf_metrics: bool = Field(True, description="send sampling_param_return_perf_metrics on specops' own requests "
                                                 "(acceptance, where the model fills it)")
    models: Literal["mount", "hub"] = Field(
        "hub", description="hub: model.yaml names hf:// sources by repo id where TensorRT-LLM downloads them "
                           "(the target always; a draft only where its key takes hub ids); mount: checkpoints "
                           "mounted at <mount_root>/<name>")
    shm_size: str | None = Field("2g", description="docker --shm-size (tutorial: 2g)")

    @field_validator("llm_args")
    @classmethod
    def _not_owned(cls, value: dict[str, Any]) -> dict[str, Any]:
        return reject_owned_keys(value, OWNED_KEYS, "llm_args")

    @classmethod
    def has_facts(cls, version: str) -> bool:
        release = trtllm_release(version)
        return release is not None and release.llmapi is not None

    def resolve(self, method) -> LlmApiSupport:
        support = resolve(self, method)
        if support.release.llmapi is None:
            raise FieldError("backend.image", f"specops has no Triton llmapi model facts for TensorRT-LLM "
                              f"{support.release.version} (image {self.image})")
        check_llm_args(support.release, self.llm_args, "backend.llm_args", self.image)
        return support
