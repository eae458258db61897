"""Config fields the two LLM-API backends (trtllm, trtllm-serve) share: how speculative_config is
spelled, which the support table (llmapi_support) derives from the image's TensorRT-LLM unless a
recipe pins a spelling."""
from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from specops.backends.container.config import ContainerBackendConfig


class LlmApiBackendConfig(ContainerBackendConfig):
    framework: ClassVar[str] = "tensorrt-llm"

    decoding_type: str | None = Field(
        None, description="speculative_config.decoding_type; default: the spelling the image's TensorRT-LLM "
                          "accepts for the method (Eagle3 or Eagle for eagle3, DraftTarget or Draft_Target, NGram)")
    speculative_model_key: Literal["speculative_model", "speculative_model_dir"] | None = Field(
        None, description="the draft's key in speculative_config; default: the one the image's TensorRT-LLM names")
