"""What the vLLM backends share: one engine-args renderer, and launching the engine as a process on CPU.

`engine_args` is the one renderer: Triton's backend writes it as model.json, vLLM's server reads it as
its --config file. A process launch serves with the vLLM CPU engine (specops.backends.vllm.cpu) where a
container launch serves with the image; only placement (host paths instead of mounts), the command and
the device settings the profile gives differ.
"""
from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Any

from specops.backends.conformance import not_in
from specops.backends.container.backend import ContainerBackend
from specops.backends.container.placement import Placed, PlacedModel, placeholder
from specops.backends.vllm import cpu as vllm_cpu
from specops.backends.vllm.config import VllmEngineConfig
from specops.backends.vllm.support import SCHEDULE_KEY, VllmSupport
from specops.host.processes import teardown_quietly
from specops.methods import MethodConfig
from specops.run.plan_step import PlanStep
from specops.run.variant import BASE, Variant
from specops.sources.schemes import ModelArtifact


def engine_args(config: VllmEngineConfig, support: VllmSupport, method: MethodConfig, target: str,
                draft: str | None) -> dict[str, Any]:
    """The engine args of one variant; `target`/`draft` are what vLLM should load (path or hub id).
    Every engine_args key and gpu_memory_utilization the profile sets is in the result."""
    if support.nested:
        args = {"model": target} | _parallel(config)
        if method.speculative:
            args["speculative_config"] = speculative_config(config, support, method, draft)
    else:
        args = _flat(config, method, target, draft)
    return args | dict(config.engine_args)


def speculative_config(config: VllmEngineConfig, support: VllmSupport, method: MethodConfig,
                       draft: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"method": support.method}
    if draft is not None:
        spec["model"] = draft
    spec["num_speculative_tokens"] = method.draft_length()
    if config.draft_schedule is not None:
        spec[SCHEDULE_KEY] = [list(r) for r in config.draft_schedule]
    if config.draft_tensor_parallel_size is not None and draft is not None:
        spec["draft_tensor_parallel_size"] = config.draft_tensor_parallel_size
    suffix = method.engine_settings() if method.kind == "suffix" else {}  # type: ignore[attr-defined]
    return spec | _lookup(method, "") | suffix


def _lookup(method: MethodConfig, prefix: str) -> dict[str, Any]:
    """ngram's prompt-lookup bounds (max, then min where set), keys after `prefix` (the flat keys' ngram_)."""
    if method.kind != "ngram":
        return {}
    bounds = {"prompt_lookup_max": method.prompt_lookup_max, "prompt_lookup_min": method.prompt_lookup_min}  # type: ignore[attr-defined]
    return {prefix + k: v for k, v in bounds.items() if v is not None}


def _parallel(config: VllmEngineConfig) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if config.tensor_parallel_size is not None:
        out["tensor_parallel_size"] = config.tensor_parallel_size
    if config.gpu_memory_utilization is not None:
        out["gpu_memory_utilization"] = config.gpu_memory_utilization
    return out


def _flat(config: VllmEngineConfig, method: MethodConfig, target: str, draft: str | None) -> dict[str, Any]:
    """The flat keys of vLLM <= 0.8.1, in the Triton tutorial's order: model, speculative_model,
    [draft TP], [TP], num_speculative_tokens."""
    args: dict[str, Any] = {"model": target}
    if method.speculative:
        args["speculative_model"] = draft if method.kind != "ngram" else "[ngram]"
        if config.draft_tensor_parallel_size is not None:
            args["speculative_draft_tensor_parallel_size"] = config.draft_tensor_parallel_size
    args |= _parallel(config)
    if method.speculative:
        args["num_speculative_tokens"] = method.draft_length()
    return args | _lookup(method, "ngram_")


class VllmEngineBackend(ContainerBackend):
    """A vLLM backend: container launch from the base, process launch on the vLLM CPU engine here."""

    config: VllmEngineConfig

    def rendered_args(self, variant: Variant, placed: Placed) -> dict[str, Any]:
        """The variant's engine args for where its models are placed (mounts, hub ids or host paths)."""
        return engine_args(self.config, self.support(variant), variant.method, placed.target.ref,
                           placed.draft.ref if placed.draft else None)

    def place_model(self, variant: Variant, role: str, source: str, artifact: ModelArtifact | None) -> PlacedModel:
        if not self.config.in_process:
            return super().place_model(variant, role, source, artifact)
        # The engine runs on this host: it loads the checkpoint the download step verified, where it is.
        return PlacedModel(str(artifact.path) if artifact is not None else placeholder(role))

    def launch(self, variant: Variant, repo: Path, log_path: Path):
        """A container (the base) or the CPU engine's process; then, where the backend reads the served config
        back (reads_back), that config held against what was rendered."""
        server = self.start_process(variant, repo, log_path) if self.config.in_process \
            else super().launch(variant, repo, log_path)
        if self.reads_back():
            try:
                self.check_served(server, variant, repo, log_path)
            except BaseException:
                teardown_quietly(lambda: server.stop(self.serving.stop_timeout_s), f"stopping the {variant.name} "
                                 "server")
                raise
        return server

    def plan(self, variant: Variant, target: ModelArtifact | None, draft: ModelArtifact | None) -> list[PlanStep]:
        steps = super().plan(variant, target, draft)
        if not self.config.in_process:
            return steps
        return [*steps[:-1], PlanStep("serve", commands=[self.show_ports(line) for line in self.process_plan(variant)])]

    @staticmethod
    def args_findings(where: str, args: dict[str, Any], r) -> list[str]:
        """The rendered engine args (and speculative_config) against the fields of the vLLM release `r`."""
        v = f"vLLM {r.version}"
        found = not_in(where, args, r.engine_args, f"an engine arg of {v}")
        if (spec := args.get("speculative_config")) is not None:
            found += not_in("speculative_config", spec, r.speculative_config or (), f"a SpeculativeConfig field of {v}")
            found += not_in("speculative_config.method", [spec.get("method")], r.methods, f"a method of {v}")
        return found

    def serving_what(self) -> str:
        return self.config.served_by if self.config.in_process else super().serving_what()

    def gpus(self) -> str:
        return self.config.gpus_used()

    def preflight(self) -> list[str]:
        return vllm_cpu.preflight() if self.config.in_process else super().preflight()

    def replays_here(self) -> bool:
        return self.config.in_process  # the vLLM CPU engine: the build the replay's worker imports

    def process_env(self, variant: Variant | None) -> dict[str, str]:
        """A process launch's environment: the vLLM CPU venv's, its share of the host's cores when the run's
        servers are up side by side (the base the second share), then the profile's env and the image facts'."""
        env = vllm_cpu.venv().environment()
        slot = 1 if variant is not None and variant.name == BASE else 0
        share = vllm_cpu.core_share(slot, self.deployment.side_by_side, sorted(os.sched_getaffinity(0)))
        if share is not None and variant is not None and vllm_cpu.BIND_VAR not in env:
            env[vllm_cpu.BIND_VAR] = share
        return env | self.container_env(variant)

    def shown_env(self, variant: Variant) -> str:
        """The process launch's environment a plan shows: what specops sets beside the inherited one."""
        env = self.process_env(variant)
        shown = ("LD_PRELOAD", vllm_cpu.BIND_VAR, *vllm_cpu.facts()["environment"], *self.container_env(variant))
        return " ".join(f"{k}={shlex.quote(env[k])}" for k in sorted(set(shown)) if k in env)

    def served(self) -> dict[str, str | None]:
        if not self.config.in_process:
            return super().served()
        c = self.config
        return {"image": None, "framework": f"vllm {c.release()} ({c.served_by})", "version_source": c.version_source()}
