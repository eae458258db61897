"""The GPU sections of `draft.train`: a vLLM container that answers the synthesis prompts, and ModelOpt's
example trainer in a container on GPUs (ModelOpt's seed recipe as its launch script runs it).

Light on purpose (the profile loader imports it): no docker, no torch, no modelopt. The synthesis server is
served by backend vllm-serve (`backend_section` is its config section; specops.pipeline.backend builds it);
what the training renders (its container, the recipe) is in specops/draft/gpu_recipe.py; the facts behind
it, each with its upstream source, in specops/draft/data/modelopt.yaml.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, Literal

import yaml
from packaging.version import Version
from pydantic import BaseModel, ConfigDict, Field, field_validator

from specops.fields import Count, Real, Seconds
from specops.run.variant import Variant, base_method
from specops.settings import env_name, secret, settings

# The image the seed's `vllm serve` runs in: Triton's vLLM image, whose vLLM version specops' image matrix
# knows (26.02: vLLM 0.15.1), the same one the vllm backend serves with by default.
VLLM_IMAGE = "nvcr.io/nvidia/tritonserver:26.02-vllm-python-py3"
# vLLM's OpenAI server takes its key from this variable when --api-key is absent
# (vllm/entrypoints/openai/api_server.py: `args.api_key or envs.VLLM_API_KEY`): the key reaches the container
# by name only (`docker run -e VLLM_API_KEY`) and the synthesizer's Authorization header, never a command line.
VLLM_KEY_ENV = env_name("vllm_api_key")
# Backend vllm-serve serves from this vLLM on (its only engine is V1: specops/backends/vllm/support.py SERVE_FROM,
# which a unit test holds this to); an older image is refused at load rather than at plan or run.
SERVE_FROM = "0.11.0"


@cache
def modelopt_facts() -> dict[str, Any]:
    """specops/draft/data/modelopt.yaml, parsed once."""
    text = (resources.files("specops.draft") / "data" / "modelopt.yaml").read_text(encoding="utf-8")
    return yaml.safe_load(text)


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _docker_gpus(value: str) -> str:
    from specops.fields import parse_gpus

    parsed = parse_gpus(value)
    if parsed is None:
        raise ValueError(f"gpus must name at least one GPU (all, a count, or device ids), got {value!r}")
    return value


class VllmSynthesisServer(_Section):
    """The seed's data step: `vllm serve <target>` in a container, answering the synthesis prompts."""

    kind: Literal["vllm"] = "vllm"
    image: str = Field(VLLM_IMAGE, description="container with vLLM (a tritonserver -vllm-python-py3 image "
                       "whose vLLM version specops' image matrix knows)")
    gpus: str = Field("1", description="docker --gpus: all, a count, or device ids (0,1)")
    tensor_parallel_size: Count = Field(1, ge=1, le=64, description="vllm serve --tensor-parallel-size (seed: 1)")
    gpu_memory_utilization: Real | None = Field(None, gt=0, le=1, description="vllm serve --gpu-memory-utilization")
    shm_size: str | None = Field("1G", description="docker --shm-size")

    @field_validator("gpus")
    @classmethod
    def _gpus(cls, value: str) -> str:
        return _docker_gpus(value)

    @field_validator("image")
    @classmethod
    def _known_image(cls, value: str) -> str:
        from specops.versions.images import ImageError, image_info

        try:
            info = image_info(value)
            version = info.version("vllm")
        except ImageError as err:
            raise ValueError(f"{err}; the synthesis server needs an image whose vLLM version is known "
                             f"(e.g. {VLLM_IMAGE})") from None
        if info.flavor != "vllm-python-py3":
            raise ValueError(f"image {value} is not a -vllm-python-py3 image (vLLM {version} is not its server)")
        if Version(version) < Version(SERVE_FROM):
            raise ValueError(f"image {value} ships vLLM {version}; the synthesis server is backend vllm-serve, which "
                             f"serves vLLM {SERVE_FROM} or newer (e.g. {VLLM_IMAGE})")
        return value

    def backend_section(self) -> dict[str, Any]:
        """The `backend` section of vllm-serve that serves the target for synthesis: the image in a container,
        the target mounted read-only, the key from $VLLM_API_KEY by name only, hub access off. No read-back of
        the served config: it needs vLLM's dev endpoints, which its API key does not guard (only /v1 and a
        few other prefixes are), on a server that answers for hours."""
        return {"kind": "vllm-serve", "launch": "container", "image": self.image, "gpus": self.gpus,
                "shm_size": self.shm_size, "ipc": None, "tensor_parallel_size": self.tensor_parallel_size,
                "gpu_memory_utilization": self.gpu_memory_utilization, "models": "mount",
                "env": {"HF_HUB_OFFLINE": "1"}, "api_key": True, "read_back": False,
                "per_request_metrics": False}


class GpuTraining(_Section):
    """Train in ModelOpt's example container on GPUs (bf16, torch.compile, data parallel), not in-process."""

    image: str = Field(modelopt_facts()["examples"]["image"],
                       description="the training container (ModelOpt's README: the PyTorch image); the pinned "
                       "nvidia-modelopt and its example scripts are installed in it at start")
    gpus: Count = Field(1, ge=1, le=64, description="GPUs, one data-parallel training process each "
                        "(accelerate launch --num_processes; seed: --num_gpu 1)")
    save_steps: Count = Field(1000, ge=1, description="checkpoint every N steps (seed: --save_steps 1000)")
    shm_size: str | None = Field("16g", description="docker --shm-size (the data loader's workers share memory)")
    timeout_s: Seconds = Field(24 * 3600, description="bound on the training container's run (at most a day)")


# The seed's data step serves the target on backend vllm-serve (the flow builds it through
# specops.pipeline.backend.synthesis_backend_for; the draft layer does not import backends) the way it serves
# every variant, stopped whatever happens to the synthesis.
# The target with speculation off; vLLM answers to its name (--served-model-name synthesis).
SYNTHESIS = Variant("synthesis", base_method())


@dataclass(frozen=True)
class SynthesisEndpoint:
    url: str  # http://host:port (the synthesizer adds /v1/chat/completions)
    model: str  # --served-model-name
    api_key: str | None


def synthesis_endpoint(server: Any) -> SynthesisEndpoint:
    """Where the synthesizer reaches the served SYNTHESIS variant (a server of backend vllm-serve)."""
    return SynthesisEndpoint(server.endpoint.http_base, SYNTHESIS.model_name, secret(settings().vllm_api_key))
