"""The method registry: method name -> its config model."""
from __future__ import annotations

from specops.methods.specs import ALL_METHODS, MethodConfig, NgramMethod, NoSpeculation, swept_methods
from specops.registry import Registry

METHODS: Registry[type[MethodConfig]] = Registry("method")
for _model in ALL_METHODS:
    METHODS.register(_model.model_fields["kind"].default, _model)

__all__ = ["METHODS", "MethodConfig", "NgramMethod", "NoSpeculation", "swept_methods"]
