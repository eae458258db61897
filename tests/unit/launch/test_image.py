"""Which repo digest names an image: the one of the repository its tag names (recorded inspect answers)."""
from __future__ import annotations

from specops.launch.image import identity_of, repository_of

TRITON = "nvcr.io/nvidia/tritonserver"
ATTRS = {"Id": "sha256:" + "a" * 64,
         "RepoDigests": [f"mirror.example/triton@sha256:{'b' * 64}", f"{TRITON}@sha256:{'c' * 64}"]}


def test_repository_of_a_tag_a_digest_and_a_registry_port():
    assert repository_of(f"{TRITON}:25.12-trtllm-python-py3") == TRITON
    assert repository_of(f"{TRITON}@sha256:{'c' * 64}") == TRITON
    assert repository_of("localhost:5000/triton") == "localhost:5000/triton"
    assert repository_of("busybox") == "busybox"


def test_the_digest_of_the_named_repository_wins():
    identity = identity_of(ATTRS, f"{TRITON}:25.12-trtllm-python-py3")
    assert identity.id == ATTRS["Id"] and identity.digest == f"{TRITON}@sha256:{'c' * 64}"


def test_docker_hub_short_names_and_images_from_no_registry():
    assert identity_of({"Id": "sha256:1", "RepoDigests": ["busybox@sha256:d"]}, "busybox:latest").digest == "busybox@sha256:d"
    assert identity_of({"Id": "sha256:1", "RepoDigests": []}, "local/built:1").digest is None
