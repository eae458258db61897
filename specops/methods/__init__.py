"""The method registry: method name -> its config model."""
from __future__ import annotations

from specops.methods.specs import ALL_METHODS, MethodConfig, NgramMethod, NoSpeculation
from specops.registry import Registry

METHODS: Registry[type[MethodConfig]] = Registry("method")
for _model in ALL_METHODS:
    METHODS.register(_model.model_fields["kind"].default, _model)


def swept_methods() -> list[str]:
    """Methods whose config has a draft length (num_speculative_tokens): what a sweep over K can vary."""
    return [n for n in METHODS.names() if "num_speculative_tokens" in METHODS.get(n).model_fields]


__all__ = ["METHODS", "MethodConfig", "NgramMethod", "NoSpeculation", "swept_methods"]
