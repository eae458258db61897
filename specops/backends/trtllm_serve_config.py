"""Config of the `trtllm-serve` backend: TensorRT-LLM's OpenAI-compatible server (PyTorch
backend) with an extra-llm-api-options YAML, as in NVIDIA's DGX Spark "Speculative Decoding"
playbook (NVIDIA/dgx-spark-playbooks nvidia/speculative-decoding/README.md)."""
from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator

from specops.backends.spec import BackendConfig

# speculative_config.decoding_type per specops method, as TensorRT-LLM's LLM API spells it.
DECODING_TYPES = {"eagle3": "Eagle3", "draft-target": "DraftTarget", "ngram": "NGram"}


class TrtllmServeBackendConfig(BackendConfig):
    kind: Literal["trtllm-serve"] = "trtllm-serve"
    summary: ClassVar[str] = "trtllm-serve (TensorRT-LLM PyTorch backend, OpenAI API) with extra LLM API options"

    image: str = Field(description="a TensorRT-LLM release image, e.g. nvcr.io/nvidia/tensorrt-llm/release:<tag>")
    host: str = Field("127.0.0.1", description="trtllm-serve --host (loopback unless you say otherwise)")
    port: int = Field(8000, ge=1, le=65535, description="trtllm-serve --port")
    tp_size: int = Field(1, ge=1, le=64)
    max_batch_size: int | None = Field(None, ge=1, description="trtllm-serve --max_batch_size")
    max_num_tokens: int | None = Field(None, ge=1, description="trtllm-serve --max_num_tokens")
    kv_cache_free_gpu_memory_fraction: float | None = Field(None, gt=0, le=1,
                                                            description="trtllm-serve --kv_cache_free_gpu_memory_fraction")
    decoding_type: str | None = Field(
        None, description="speculative_config.decoding_type; default per method: "
                          + ", ".join(f"{k} -> {v}" for k, v in DECODING_TYPES.items()))
    speculative_model_key: Literal["speculative_model_dir", "speculative_model"] = Field(
        "speculative_model_dir", description="the playbook's key; newer TensorRT-LLM docs write speculative_model")
    llm_api_options: dict[str, Any] = Field(
        default_factory=dict, description="the other top-level keys of the extra-llm-api-options YAML")
    enable_iter_perf_stats: bool = Field(
        True, description="add enable_iter_perf_stats: true so /metrics carries specDecodingStats (acceptance)")
    models_mount: str = Field("/models", description="where target/ and draft/ appear in the container")
    config_mount: str = Field("/config", description="where the rendered YAML appears in the container")
    pre_serve: list[str] = Field(default_factory=list, description="shell lines run in the container before trtllm-serve")
    env: dict[str, str] = Field(default_factory=dict, description="container environment (never secrets)")
    extra_args: list[str] = Field(default_factory=list, description="more trtllm-serve arguments, verbatim")

    @field_validator("llm_api_options")
    @classmethod
    def _options(cls, value: dict[str, Any]) -> dict[str, Any]:
        if "speculative_config" in value:
            raise ValueError("speculative_config is written by specops from the method; set decoding_type/"
                             "speculative_model_key instead")
        return value

    @field_validator("env")
    @classmethod
    def _env(cls, value: dict[str, str]) -> dict[str, str]:
        secret = [k for k in value if set(k.upper().split("_")) & {"TOKEN", "SECRET", "PASSWORD", "KEY"}]
        if secret:
            raise ValueError(f"{', '.join(secret)}: secrets are passed from the environment, not the profile")
        return value
