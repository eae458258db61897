"""The image matrix: every image a profile may name resolves to framework versions with a source."""
from __future__ import annotations

import pytest

from specops.versions.images import ImageError, image_info, known_images, split_image
from specops.versions.store import load


def test_tritonserver_tags_resolve_to_nvidias_matrix():
    info = image_info("nvcr.io/nvidia/tritonserver:25.12-vllm-python-py3")
    assert (info.family, info.release, info.flavor) == ("tritonserver", "25.12", "vllm-python-py3")
    assert info.version("vllm") == "0.11.1" and info.version("triton") == "2.64.0"
    assert info.pinned("vllm").source.endswith("docs/introduction/compatibility.md:82")
    assert image_info("nvcr.io/nvidia/tritonserver:26.04-trtllm-python-py3").version("tensorrt-llm") == "1.2.1"


def test_matrix_wins_over_a_build_recipe_that_disagrees():
    """26.03: build.py names vLLM 0.16.0, NVIDIA's compatibility matrix 0.17.1 (the image takes vLLM
    from the nvcr.io/nvidia/vllm base image): the matrix is what the image ships."""
    row = load("images")["tritonserver"]["releases"]["26.03"]["vllm"]
    assert row["version"] == "0.17.1" and row["recipe"]["version"] == "0.16.0"
    assert image_info("nvcr.io/nvidia/tritonserver:26.03-vllm-python-py3").version("vllm") == "0.17.1"


def test_release_image_tags_name_their_version():
    assert image_info("nvcr.io/nvidia/tensorrt-llm/release:1.3.0rc12").version("tensorrt-llm") == "1.3.0rc12"


@pytest.mark.parametrize("image, needle", [
    ("nvcr.io/nvidia/tritonserver:24.12-vllm-python-py3", "Triton release 24.12 is not in specops' image matrix"),
    ("nvcr.io/nvidia/tritonserver:latest", "expected a tag <YY.MM>-<flavor>"),
    ("nvcr.io/nvidia/tritonserver", "no tag"),
    ("nvcr.io/nvidia/tritonserver@sha256:abc", "by tag"),
    ("docker.io/library/ubuntu:22.04", "images only"),
    ("nvcr.io/nvidia/tensorrt-llm/release:9.9.9", "tag 9.9.9 is not in specops' image matrix"),
])
def test_unknown_images_are_refused_naming_what_is_known(image, needle):
    with pytest.raises(ImageError, match=needle):
        image_info(image)


def test_an_image_with_unknown_framework_version_says_why():
    info = image_info("nvcr.io/nvidia/tensorrt-llm/release:spark-single-gpu-dev")
    with pytest.raises(ImageError, match="version inside it is unknown .*development tag"):
        info.version("tensorrt-llm")
    with pytest.raises(ImageError, match="names no tensorrt-llm version"):
        image_info("nvcr.io/nvidia/tritonserver:26.08-trtllm-python-py3").version("tensorrt-llm")


def test_every_known_version_cites_where_it_was_read():
    data = load("images")
    rows = list(data["tritonserver"]["releases"].values()) + list(data["tensorrt-llm-release"]["tags"].values())
    for row in rows:
        for framework, pin in row.items():
            assert pin["source"], (framework, pin)
            assert pin["version"] is not None or pin["why"], (framework, pin)


def test_known_images_lists_only_versions_that_are_known():
    images = known_images("vllm", "tritonserver", "vllm-python-py3")
    assert images["nvcr.io/nvidia/tritonserver:25.02-vllm-python-py3"] == "0.7.0"
    assert all(version and version != "None" for version in images.values())
    assert split_image("localhost:5000/tritonserver:25.12-vllm-python-py3") == ("localhost:5000/tritonserver",
                                                                             "25.12-vllm-python-py3")
