"""Config of the embedded CPU backend: a Triton Python-backend model speaking vLLM's I/O."""
from __future__ import annotations

import dataclasses
from typing import ClassVar, Literal

from pydantic import Field

from specops.backends.spec import BackendConfig, FieldError
from specops.fields import Count
from specops.runtime.proposers import PROPOSERS, make_proposer

# What the embedded runtime serves: chain verification of any of these proposers.
METHODS = frozenset({"none", "ngram", "draft-target", "eagle", "eagle3", "medusa"})


class LocalBackendConfig(BackendConfig):
    kind: Literal["local"] = "local"
    summary: ClassVar[str] = "embedded CPU runtime on tritonserver from nvidia-pytriton"
    # One thread measured fastest for a 135M model on 2 cores, and it leaves a core for
    # genai-perf/perf_analyzer so the client does not steal time from the server.
    threads: Count = Field(1, ge=1, le=64, description="torch threads inside the model")
    exit_timeout_s: Count = Field(5, ge=1, le=300, description="tritonserver --exit-timeout-secs")
    instances: Count = Field(1, ge=1, le=16, description="model instances (processes) serving requests "
                           "in parallel; more than one helps concurrent load such as data synthesis")
    draft_length: Literal["fixed", "adaptive"] = Field(
        "adaptive", description="fixed: always method.num_speculative_tokens drafts; adaptive: per "
        "step, the length (up to that) with the most expected tokens per second, from measured "
        "verification and draft costs and measured acceptance")

    relaxed_topk: Count | None = Field(
        None, ge=2, le=100, description="LOSSY: also accept a draft token that is among the target's top-k "
        "(relaxed acceptance); outputs then differ from plain decoding and the lossless check fails the run. "
        "For studying what exactness costs; leave unset for lossless speculation")

    def resolve(self, method) -> str:
        """The runtime's proposer for `method` (its kind)."""
        if method.kind not in METHODS:
            raise FieldError("method.kind", f"the embedded runtime serves {', '.join(sorted(METHODS))}")
        if getattr(method, "medusa_choices", None) is not None:
            raise FieldError("method.medusa_choices", "the embedded runtime verifies one chain (no Medusa trees); "
                              "remove medusa_choices")
        if not method.needs_draft:  # built here as the server would build it: what it refuses, the profile does
            _check_options(method)
        return method.kind


def _check_options(method) -> None:
    """The runtime's own checks of the options (e.g. n-gram: specops/runtime/proposers.py NgramProposer.Options,
    where an unset prompt_lookup_min is 2: prompt_lookup_max 1 alone cannot be served)."""
    given = method.model_dump(exclude={"kind"}, exclude_none=True)
    try:
        make_proposer(method.kind, given)
    except ValueError as err:
        options = PROPOSERS.get(method.kind).Options
        unset = {f.name: f.default for f in dataclasses.fields(options) if f.name not in given}
        defaults = f" (unset, the runtime's defaults: {unset})" if unset else ""
        raise FieldError("method", f"the embedded runtime cannot serve it: {err}{defaults}") from None
