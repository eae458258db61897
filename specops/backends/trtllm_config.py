"""Config of the `trtllm` backend: the TRT-LLM LLM-API (PyTorch) Triton model, `-trtllm-python-py3`.

Light on purpose (the profile loader imports it): no tritonclient, no docker.
"""
from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator

from specops.backends.spec import BackendConfig, reject_owned_keys

METHODS = frozenset({"none", "ngram", "draft-target", "eagle3"})
NOTE = ("Medusa and EAGLE-1 are not served by the TRT-LLM LLM API / PyTorch backend; use backend "
        "'trtllm-engine' (TRT engine + inflight_batcher_llm)")
# `decoding_type` per specops method. "DraftTarget" is what the LLM API parses
# (DecodingBaseConfig.from_dict: MTP, Eagle/Eagle3, NGram, DraftTarget, ...); the Triton tutorial's
# "Draft_Target" is not a key there and fails with "Invalid decoding type".
DECODING_TYPE = {"draft-target": "DraftTarget", "eagle3": "Eagle3", "ngram": "NGram", "mtp": "MTP"}
OWNED_KEYS = frozenset({"model", "backend", "tensor_parallel_size", "pipeline_parallel_size",
                        "speculative_config", "triton_config"})


class TrtllmBackendConfig(BackendConfig):
    kind: Literal["trtllm"] = "trtllm"
    summary: ClassVar[str] = "TRT-LLM LLM API (PyTorch) Triton model in the -trtllm-python-py3 container"
    image: str = Field("nvcr.io/nvidia/tritonserver:25.12-trtllm-python-py3",
                       description="Triton container with TensorRT-LLM (tutorial: >= 25.01)")
    tensor_parallel_size: int = Field(1, ge=1, le=64)
    pipeline_parallel_size: int = Field(1, ge=1, le=64)
    llm_args: dict[str, Any] = Field(default_factory=dict, description="more LLM API args for model.yaml, verbatim")
    draft_key: Literal["speculative_model", "speculative_model_dir"] = Field(
        "speculative_model", description="the draft's key in speculative_config: the tutorial's "
                                         "speculative_model; TRT-LLM 0.2x-1.0 took speculative_model_dir")
    max_batch_size: int = Field(0, ge=0, description="triton_config.max_batch_size (0: the template's value)")
    decoupled: bool = Field(False, description="triton_config.decoupled; True lets genai-perf stream (TTFT/ITL)")
    perf_metrics: bool = Field(True, description="ask for return_perf_metrics (acceptance); containers whose "
                                                 "llmapi config.pbtxt lacks the input need false")
    models: Literal["mount", "hub"] = Field(
        "hub", description="hub: model.yaml names hf:// sources by repo id (tutorial); mount: checkpoints "
                           "mounted at <mount_root>/<name>")
    mount_root: str = Field("/hf-models", pattern=r"^/")
    hf_cache: str | None = Field(None, description="host dir mounted at /root/.cache/huggingface")
    shm_size: str = Field("2g", description="docker --shm-size (tutorial: 2g)")
    gpus: str = Field("all", description="docker --gpus")

    @field_validator("llm_args")
    @classmethod
    def _not_owned(cls, value: dict[str, Any]) -> dict[str, Any]:
        return reject_owned_keys(value, OWNED_KEYS, "llm_args")

    def method_problems(self, method: str) -> list[str]:
        return method_problems(self, method)


def method_problems(config: TrtllmBackendConfig, method: str) -> list[str]:
    if method == "medusa":
        return [f"Medusa is not supported by the LLM API backend: {NOTE}"]
    if method == "eagle":
        return [f"EAGLE-1 checkpoints do not load in the LLM API backend (only EAGLE-3): {NOTE}"]
    return []
