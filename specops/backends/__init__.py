"""The backend registry: name -> spec (config model, supported methods, lazy implementation)."""
from __future__ import annotations

from specops.backends.local_config import LocalBackendConfig
from specops.backends.spec import BackendConfig, BackendSpec
from specops.registry import Registry

BACKENDS: Registry[BackendSpec] = Registry("backend")
BACKENDS.register(
    "local",
    BackendSpec(
        name="local",
        config_model=LocalBackendConfig,
        methods=frozenset({"none", "ngram"}),
        impl="specops.backends.local:LocalBackend",
        note="the embedded runtime serves draft models and trained heads from a later release",
    ),
)

__all__ = ["BACKENDS", "BackendConfig", "BackendSpec"]
