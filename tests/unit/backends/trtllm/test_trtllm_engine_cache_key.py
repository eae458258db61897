"""The engine cache key follows the GPU model and the image bytes, so a shared cache never hands an
engine built on one GPU (or by one TensorRT) to another. No GPU here: NVML is faked (FakeNvml, two
recorded devices) and the image identity is given; tests/docker/test_image_identity.py reads a real one."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from specops.launch.image import ImageIdentity
from specops.methods.specs import NgramMethod
from specops.pipeline.backend import backend_for
from specops.pipeline.render import repository_key
from specops.profile.loader import load_profile
from specops.run.variant import Variant
from specops.sources.schemes import ModelArtifact
from tests.unit.cost.test_nvml import FakeNvml

TARGET = ModelArtifact(Path("/models/target"), "hf://meta-llama/Llama-3.1-8B-Instruct", "a" * 64)


class FakeNvmlOf(FakeNvml):
    """The fake NVML with one GPU model in both slots: "h100" (9.0) or "l4" (8.9)."""

    def __init__(self, gpu: str):
        super().__init__()
        self.gpu = gpu

    def nvmlDeviceGetName(self, handle):
        return "NVIDIA H100 80GB HBM3" if self.gpu == "h100" else "NVIDIA L4"

    def nvmlDeviceGetCudaComputeCapability(self, handle):
        return (9, 0) if self.gpu == "h100" else (8, 9)


def engine_key(monkeypatch, gpu: str, image_id: str, overrides=('backend.gpus="1"',)) -> str:
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvmlOf(gpu))
    backend = backend_for(load_profile("eagle-trtllm-engine", list(overrides)).profile)
    backend.image_identity = ImageIdentity(image_id, None)  # what DockerLauncher.image_identity answered
    variant = Variant("base", NgramMethod())
    return repository_key(backend, variant, TARGET, None)


def test_an_engine_built_on_an_h100_is_not_handed_to_an_l4(monkeypatch):
    h100 = engine_key(monkeypatch, "h100", "sha256:" + "1" * 64)
    assert h100 == engine_key(monkeypatch, "h100", "sha256:" + "1" * 64)
    assert h100 != engine_key(monkeypatch, "l4", "sha256:" + "1" * 64)


def test_a_re_pulled_image_under_the_same_tag_builds_again(monkeypatch):
    assert engine_key(monkeypatch, "h100", "sha256:" + "1" * 64) != engine_key(monkeypatch, "h100", "sha256:" + "2" * 64)


def test_the_key_names_what_it_was_computed_from(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvmlOf("l4"))
    backend = backend_for(load_profile("eagle-trtllm-engine", ['backend.gpus="1"']).profile)
    backend.image_identity = ImageIdentity("sha256:" + "3" * 64, "nvcr.io/nvidia/tritonserver@sha256:" + "4" * 64)
    identity = backend.cache_identity()
    assert identity["gpu_architecture"] == [{"name": "NVIDIA L4", "compute_capability": "8.9"}]  # gpus=1: GPU 0 only
    assert identity["image_id"] == "sha256:" + "3" * 64
    assert backend.served()["image_digest"] == "nvcr.io/nvidia/tritonserver@sha256:" + "4" * 64


def test_without_nvml_the_key_says_why_instead_of_failing():
    from specops.cost.nvml import gpu_architecture, nvml_available

    if nvml_available() is None:
        pytest.skip("this host has a usable NVIDIA GPU")
    assert gpu_architecture(None).startswith("unknown: ")
