"""Config of the `vllm` backend: Triton's vLLM backend in the `-vllm-python-py3` container.

Light on purpose (the profile loader imports it): no tritonclient, no docker.
"""
from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from specops.backends.container_common import image_release
from specops.backends.spec import BackendConfig, reject_owned_keys

METHODS = frozenset({"none", "ngram", "draft-target", "eagle", "eagle3", "medusa"})
# vLLM `speculative_config.method` per specops method (vLLM docs, features/spec_decode).
NESTED_METHOD = {"ngram": "ngram", "draft-target": "draft_model", "eagle": "eagle", "eagle3": "eagle3",
                 "medusa": "medusa", "mtp": "mtp"}
# Flat keys of vLLM <= 0.7 (the Triton tutorial's model.json) know no EAGLE-3 or MTP.
LEGACY_METHODS = frozenset({"none", "ngram", "draft-target", "eagle", "medusa"})
# Triton 25.03 is the first container whose vLLM (0.7.3) loads EAGLE-1 checkpoints as published
# (vLLM PR 12304); the tutorial says to convert them on <= 25.02.
EAGLE_DIRECT_FROM = (25, 3)
# Keys specops writes itself; `engine_args` may not override them.
OWNED_KEYS = frozenset({"model", "speculative_config", "speculative_model", "num_speculative_tokens",
                        "speculative_draft_tensor_parallel_size", "tensor_parallel_size",
                        "gpu_memory_utilization", "ngram_prompt_lookup_max", "ngram_prompt_lookup_min"})


class VllmBackendConfig(BackendConfig):
    kind: Literal["vllm"] = "vllm"
    summary: ClassVar[str] = "Triton vLLM backend in the -vllm-python-py3 container (Docker, GPU)"
    image: str = Field("nvcr.io/nvidia/tritonserver:25.12-vllm-python-py3",
                       description="Triton container with the vLLM backend")
    legacy_keys: bool = Field(False, description="write the tutorial's flat speculative_model keys (vLLM <= 0.7 "
                                                 "containers) instead of a nested speculative_config")
    tensor_parallel_size: int | None = Field(None, ge=1, le=64, description="omitted from model.json when unset")
    draft_tensor_parallel_size: int | None = Field(None, ge=1, le=64)
    gpu_memory_utilization: float | None = Field(None, gt=0, le=1)
    engine_args: dict[str, Any] = Field(default_factory=dict, description="more vLLM engine args, verbatim")
    models: Literal["mount", "hub"] = Field(
        "mount", description="mount: downloaded checkpoints are mounted at <mount_root>/<name>; hub: model.json "
                             "names hf:// sources by repo id and the container downloads them")
    mount_root: str = Field("/hf-models", pattern=r"^/", description="where checkpoints appear in the container")
    hf_cache: str | None = Field(None, description="host dir mounted at /root/.cache/huggingface")
    shm_size: str = Field("1G", description="docker --shm-size (tutorial: 1G)")
    gpus: str = Field("all", description="docker --gpus")
    exit_timeout_s: int = Field(30, ge=1, le=600, description="tritonserver --exit-timeout-secs")

    @field_validator("engine_args")
    @classmethod
    def _not_owned(cls, value: dict[str, Any]) -> dict[str, Any]:
        return reject_owned_keys(value, OWNED_KEYS, "engine_args")

    @model_validator(mode="after")
    def _image(self) -> "VllmBackendConfig":
        if "vllm" not in self.image.rsplit(":", 1)[-1] and image_release(self.image) is not None:
            raise ValueError(f"image {self.image!r} is not a -vllm-python-py3 Triton container")
        return self

    def method_problems(self, method: str) -> list[str]:
        return method_problems(self, method)


def method_problems(config: VllmBackendConfig, method: str) -> list[str]:
    """Method x container combinations this backend refuses (the schema cannot see both at once)."""
    problems = []
    release = image_release(config.image)
    if method == "eagle" and release is not None and release < EAGLE_DIRECT_FROM:
        problems.append(
            f"EAGLE-1 checkpoints need converting on Triton containers older than 25.03 (vLLM < 0.7.3); "
            f"image {config.image} is {release[0]:02d}.{release[1]:02d}: use a 25.03+ image, or convert the "
            "draft with the script the Triton tutorial links (vLLM PR 12304) and give the converted checkpoint "
            "as the draft source")
    if config.legacy_keys and method not in LEGACY_METHODS:
        problems.append(f"method {method!r} has no legacy flat keys (vLLM <= 0.7 lacks it): set "
                        "backend.legacy_keys: false and use a container with a newer vLLM")
    return problems
