"""The backend registry: name -> spec (config model, supported methods, lazy implementation)."""
from __future__ import annotations

from specops.backends.local_config import LocalBackendConfig
from specops.backends.trtllm_config import METHODS as TRTLLM_METHODS
from specops.backends.trtllm_config import NOTE as TRTLLM_NOTE
from specops.backends.trtllm_config import TrtllmBackendConfig
from specops.backends.trtllm_engine_config import TrtllmEngineBackendConfig
from specops.backends.trtllm_serve_config import TrtllmServeBackendConfig
from specops.backends.vllm_config import METHODS as VLLM_METHODS
from specops.backends.vllm_config import VllmBackendConfig
from specops.backends.spec import BackendConfig, BackendSpec
from specops.registry import Registry

BACKENDS: Registry[BackendSpec] = Registry("backend")
BACKENDS.register(
    "local",
    BackendSpec(
        name="local",
        config_model=LocalBackendConfig,
        methods=frozenset({"none", "ngram", "draft-target", "eagle", "eagle3", "medusa"}),
        impl="specops.backends.local:LocalBackend",
        note="chain verification on CPU; trained heads and drafts come from `draft: train:`",
    ),
)

BACKENDS.register(
    "vllm",
    BackendSpec(
        name="vllm",
        config_model=VllmBackendConfig,
        methods=VLLM_METHODS,
        impl="specops.backends.vllm:VllmBackend",
        needs_gpu=True,
        note="EAGLE-1 checkpoints need a 25.03+ -vllm-python-py3 image (or converting)",
    ),
)
BACKENDS.register(
    "trtllm",
    BackendSpec(
        name="trtllm",
        config_model=TrtllmBackendConfig,
        methods=TRTLLM_METHODS,
        impl="specops.backends.trtllm:TrtllmBackend",
        needs_gpu=True,
        note=TRTLLM_NOTE,
    ),
)
BACKENDS.register(
    "trtllm-engine",
    BackendSpec(
        name="trtllm-engine",
        config_model=TrtllmEngineBackendConfig,
        methods=frozenset({"none", "eagle", "medusa", "draft-target"}),
        impl="specops.backends.trtllm_engine:TrtllmEngineBackend",
        needs_gpu=True,
        note="TensorRT-LLM engines (convert_checkpoint + trtllm-build) on Triton inflight_batcher_llm; "
        "Medusa and EAGLE-1 engines",
    ),
)
BACKENDS.register(
    "trtllm-serve",
    BackendSpec(
        name="trtllm-serve",
        config_model=TrtllmServeBackendConfig,
        methods=frozenset({"none", "eagle3", "draft-target", "ngram"}),
        impl="specops.backends.trtllm_serve:TrtllmServeBackend",
        needs_gpu=True,
        note="trtllm-serve (PyTorch backend, OpenAI API); EAGLE-1 and Medusa engines: use trtllm-engine",
    ),
)

__all__ = ["BACKENDS", "BackendConfig", "BackendSpec"]
