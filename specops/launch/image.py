"""Which image a tag named on this Docker engine: its content-addressable ID and registry digest.

Facts (Docker Engine API, ImageInspect; docker-py 7.2 `client.images.get(name).attrs`):
- `Id` is "sha256:<hex>", the digest of the image's configuration, which lists its layers' digests:
  the same bytes give the same Id on every host; a rebuilt or re-pulled different image, another.
- `RepoDigests` are "<repository>@sha256:<hex>": digests of registry manifests that reference the
  image, what `docker pull <repository>@sha256:...` fetches again. Empty for an image that came from
  no registry (built or `docker import`ed here).
Sources: https://docs.docker.com/reference/api/engine/ (ImageInspect: Id, RepoDigests),
https://docs.rs/bollard-stubs/1.42.0-rc.8/bollard_stubs/models/struct.ImageInspect.html (same field texts).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ImageIdentity:
    id: str  # sha256:<hex> of the image configuration
    digest: str | None  # <repository>@sha256:<hex> from a registry, None for a local-only image


def repository_of(name: str) -> str:
    """`nvcr.io/nvidia/tritonserver:25.12-trtllm-python-py3` -> `nvcr.io/nvidia/tritonserver`."""
    name = name.split("@", 1)[0]
    slash = name.rfind("/")
    colon = name.rfind(":")
    return name[:colon] if colon > slash else name


def identity_of(attrs: dict, name: str) -> ImageIdentity:
    """The identity in an inspect answer; the repo digest of `name`'s repository when it has several."""
    digests = list(attrs.get("RepoDigests") or [])
    repo = repository_of(name)
    mine = [d for d in digests if d.split("@", 1)[0] in (repo, f"docker.io/{repo}", f"docker.io/library/{repo}")]
    return ImageIdentity(id=attrs["Id"], digest=(mine or digests or [None])[0])
