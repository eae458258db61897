"""The backend registry: name -> spec (config model, supported methods, lazy implementation).

Each backend's methods come from its support table (the one place that says what it serves on
which version), so the registry, profile validation, plan and render cannot disagree.
"""
from __future__ import annotations

from specops.backends.local.config import METHODS as LOCAL_METHODS
from specops.backends.local.config import LocalBackendConfig
from specops.backends.spec import BackendConfig, BackendSpec
from specops.backends.trtllm import engine_support as trtllm_engine_support
from specops.backends.trtllm import llmapi_support
from specops.backends.trtllm.config import TrtllmBackendConfig
from specops.backends.trtllm.engine_config import TrtllmEngineBackendConfig
from specops.backends.trtllm.serve_config import TrtllmServeBackendConfig
from specops.backends.vllm import support as vllm_support
from specops.backends.vllm.config import VllmBackendConfig, VllmServeBackendConfig
from specops.bench.target import Api
from specops.registry import Registry

BACKENDS: Registry[BackendSpec] = Registry("backend")
for _spec in (
    BackendSpec("local", LocalBackendConfig, LOCAL_METHODS, "specops.backends.local.backend:LocalBackend",
                (Api.KSERVE_VLLM, Api.TRITON_GENERATE),
                note="chain verification on CPU; trained heads and drafts come from `draft: train:`"),
    BackendSpec("vllm", VllmBackendConfig, vllm_support.METHODS, "specops.backends.vllm.backend:VllmBackend",
                (Api.KSERVE_VLLM, Api.TRITON_GENERATE),
                needs_gpu=True, note="Triton vLLM backend; what runs depends on the vLLM in the image; launch: "
                "process runs it on this CPU"),
    BackendSpec("vllm-serve", VllmServeBackendConfig, vllm_support.METHODS,
                "specops.backends.vllm.serve:VllmServeBackend", (Api.OPENAI_COMPLETIONS, Api.OPENAI_CHAT),
                needs_gpu=True, note="vLLM's own OpenAI server; launch: process runs it on this CPU"),
    BackendSpec("trtllm", TrtllmBackendConfig, llmapi_support.METHODS, "specops.backends.trtllm.backend:TrtllmBackend",
                (Api.KSERVE_LLMAPI,),
                needs_gpu=True, note=llmapi_support.ELSEWHERE["medusa"].split("; ")[1]),
    BackendSpec("trtllm-engine", TrtllmEngineBackendConfig, trtllm_engine_support.METHODS,
                "specops.backends.trtllm.engine:TrtllmEngineBackend", (Api.KSERVE_TRTLLM,), needs_gpu=True,
                note="TensorRT-LLM engines (convert_checkpoint + trtllm-build) on Triton inflight_batcher_llm"),
    BackendSpec("trtllm-serve", TrtllmServeBackendConfig, llmapi_support.METHODS,
                "specops.backends.trtllm.serve:TrtllmServeBackend",
                (Api.OPENAI_COMPLETIONS, Api.OPENAI_CHAT), needs_gpu=True,
                note="trtllm-serve (PyTorch backend, OpenAI API); "
                + llmapi_support.ELSEWHERE["medusa"].split("; ")[1]),
):
    BACKENDS.register(_spec.name, _spec)


def needs_gpu(config: BackendConfig) -> bool:
    """Whether a profile's backend section runs its servers on a GPU host (a vLLM backend with launch:
    process runs on this host's CPU)."""
    return config.on_gpu(BACKENDS.get(config.kind).needs_gpu)


__all__ = ["BACKENDS", "BackendConfig", "BackendSpec", "needs_gpu"]
