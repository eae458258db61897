"""Which framework versions a container image ships: the image matrix (data/images.yaml).

A backend renders for the framework inside the image its profile pins, so every image a
profile names must resolve here to a version with its source, or the profile is refused.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from specops.versions.store import load

TRITON_TAG = re.compile(r"^(?P<release>\d{2}\.\d{2})-(?P<flavor>[a-z0-9-]+)$")


class ImageError(ValueError):
    """An image whose framework version specops cannot establish."""


@dataclass(frozen=True)
class Pinned:
    """One framework inside an image: its version (None when unknown), where that was read, why unknown."""

    framework: str
    version: str | None
    source: str
    why: str | None = None
    models_from: str | None = None  # where the image's Triton model templates come from, when they do


@dataclass(frozen=True)
class ImageInfo:
    image: str
    family: str  # "tritonserver" | a family whose tags name their version ("tensorrt-llm-release", "vllm-openai")
    release: str  # "25.12" for tritonserver, the tag for the other families
    flavor: str | None  # "vllm-python-py3", "trtllm-python-py3", ... (tritonserver only)
    pins: dict[str, Pinned]

    def pinned(self, framework: str) -> Pinned:
        """The framework's entry; ImageError when the image carries none or its version is unknown."""
        pin = self.pins.get(framework)
        if pin is None:
            raise ImageError(f"image {self.image}: specops' image matrix names no {framework} version for it "
                             f"({_where_to_add()})")
        if pin.version is None:
            raise ImageError(f"image {self.image}: the {framework} version inside it is unknown ({pin.why}; "
                             f"read: {pin.source}); pin an image whose version is known")
        return pin

    def version(self, framework: str) -> str:
        return self.pinned(framework).version  # type: ignore[return-value]


def _where_to_add() -> str:
    return ("add a row to specops/versions/data/images.yaml with the upstream file that names the version, "
            "or regenerate it with tools/versions/extract_images.py")


def _pins(row: dict) -> dict[str, Pinned]:
    return {fw: Pinned(fw, None if v.get("version") is None else str(v["version"]), v.get("source", ""),
                       v.get("why"), v.get("models_from"))
            for fw, v in row.items()}


def split_image(image: str) -> tuple[str, str]:
    """(repository, tag) of an image reference; a digest or a missing tag is refused."""
    if "@" in image:
        raise ImageError(f"image {image}: name it by tag (the tag is what the version matrix knows), not by digest")
    repo, sep, tag = image.rpartition(":")
    if not sep or "/" in tag:
        raise ImageError(f"image {image}: no tag; name a release tag, e.g. "
                         "nvcr.io/nvidia/tritonserver:25.12-vllm-python-py3")
    return repo, tag


# Families whose tag is the framework version itself (images.yaml: repository + tags), besides tritonserver.
TAGGED_FAMILIES = ("tensorrt-llm-release", "vllm-openai")


def image_info(image: str) -> ImageInfo:
    """The versions inside `image`, as the matrix knows them; ImageError when it does not know the image."""
    repo, tag = split_image(image)
    data = load("images")
    triton = data["tritonserver"]
    if repo == triton["repository"]:
        match = TRITON_TAG.match(tag)
        if not match:
            raise ImageError(f"image {image}: expected a tag <YY.MM>-<flavor>, e.g. 25.12-vllm-python-py3")
        row = triton["releases"].get(match["release"])
        if row is None:
            raise ImageError(f"image {image}: Triton release {match['release']} is not in specops' image matrix "
                             f"(known: {', '.join(sorted(triton['releases']))}); {_where_to_add()}")
        return ImageInfo(image, "tritonserver", match["release"], match["flavor"], _pins(row))
    for family in TAGGED_FAMILIES:
        images = data[family]
        if repo == images["repository"]:
            row = images["tags"].get(tag)
            if row is None:
                raise ImageError(f"image {image}: tag {tag} is not in specops' image matrix (known: "
                                 f"{', '.join(sorted(images['tags']))}); {_where_to_add()}")
            return ImageInfo(image, family, tag, None, _pins(row))
    tagged = " and ".join(f"{data[f]['repository']}:<version>" for f in TAGGED_FAMILIES)
    raise ImageError(f"image {image}: specops knows the framework versions of {triton['repository']}:<YY.MM>-<flavor> "
                     f"and {tagged} images only; {_where_to_add()}")


def known_images(framework: str, family: str, flavor: str | None = None) -> dict[str, str]:
    """Images of one family whose `framework` version the matrix knows: image -> version."""
    data = load("images")
    if family == "tritonserver":
        triton = data["tritonserver"]
        rows = {f"{triton['repository']}:{release}-{flavor}": row
                for release, row in sorted(triton["releases"].items())}
    else:
        rel = data[family]
        rows = {f"{rel['repository']}:{tag}": row for tag, row in sorted(rel["tags"].items())}
    return {image: str(row[framework]["version"]) for image, row in rows.items()
            if (row.get(framework) or {}).get("version") is not None}
