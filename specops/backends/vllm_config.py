"""Config of the `vllm` backend: Triton's vLLM backend in the `-vllm-python-py3` container.

Light on purpose (the profile loader imports it): no tritonclient, no docker. Whether model.json
nests speculation in speculative_config or uses the flat speculative_* keys follows from the vLLM
in the image (vllm_support), not from a profile switch.
"""
from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator

from specops.backends.container_config import ContainerBackendConfig
from specops.backends.spec import reject_owned_keys
from specops.backends.vllm_support import VllmSupport, resolve
from specops.fields import Count, Real
from specops.versions.vllm import vllm_release

# Keys specops writes itself; `engine_args` may not override them.
OWNED_KEYS = frozenset({"model", "speculative_config", "speculative_model", "num_speculative_tokens",
                        "speculative_draft_tensor_parallel_size", "tensor_parallel_size",
                        "gpu_memory_utilization", "ngram_prompt_lookup_max", "ngram_prompt_lookup_min"})


class VllmBackendConfig(ContainerBackendConfig):
    kind: Literal["vllm"] = "vllm"
    framework: ClassVar[str] = "vllm"
    flavor: ClassVar[str] = "vllm-python-py3"
    summary: ClassVar[str] = "Triton vLLM backend in the -vllm-python-py3 container (Docker, GPU)"

    # 26.02 ships vLLM 0.15.1, the first whose V1 engine runs every method this backend serves
    # (draft models included: 0.10.1.1-0.13.0 raise NotImplementedError for them), and the newest
    # release whose vllm_backend code specops could read (main of 2026-01-09 stands in for r26.02).
    image: str = Field("nvcr.io/nvidia/tritonserver:26.02-vllm-python-py3",
                       description="Triton container with the vLLM backend")
    tensor_parallel_size: Count | None = Field(None, ge=1, le=64, description="omitted from model.json when unset")
    draft_tensor_parallel_size: Count | None = Field(None, ge=1, le=64)
    gpu_memory_utilization: Real | None = Field(None, gt=0, le=1)
    engine_args: dict[str, Any] = Field(default_factory=dict, description="more vLLM engine args, verbatim")
    shm_size: str | None = Field("1G", description="docker --shm-size (tutorial: 1G)")
    exit_timeout_s: Count = Field(30, ge=1, le=600, description="tritonserver --exit-timeout-secs")
    draft_format: Literal["published", "modelopt"] = Field(
        "published", description="published: EAGLE drafts in their authors' layout; modelopt: a ModelOpt export "
        "(LlamaForCausalLMEagle3 for every eagle mode), which vLLM loads with its eagle3 method - drafts trained "
        "here are ModelOpt exports")

    @field_validator("engine_args")
    @classmethod
    def _not_owned(cls, value: dict[str, Any]) -> dict[str, Any]:
        return reject_owned_keys(value, OWNED_KEYS, "engine_args")

    @classmethod
    def has_facts(cls, version: str) -> bool:
        return vllm_release(version) is not None

    def resolve(self, method) -> VllmSupport:
        return resolve(self, method)
