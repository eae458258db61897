"""Config fields every containerised backend shares, and the image -> framework version lookup.

Light on purpose (the profile loader imports it): no docker, no tritonclient.
"""
from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from specops.backends.spec import BackendConfig, FieldError
from specops.versions.images import ImageError, ImageInfo, image_info, known_images


class ContainerBackendConfig(BackendConfig):
    # The framework whose version decides what the backend renders, and the images that carry it:
    # (family, flavor) pairs of the version matrix (flavor None: not a tritonserver image).
    framework: ClassVar[str]
    image_kinds: ClassVar[tuple[tuple[str, str | None], ...]]

    image: str = Field(description="the container image; its framework version decides what is rendered")
    framework_version: str | None = Field(
        None, description="the framework version inside `image`, for an image specops' version matrix does not "
                          "know (a mirror or a custom build); everything rendered is checked against it")
    gpus: str = Field("all", description="docker --gpus: all, a count, or device ids (0,1)")
    shm_size: str | None = Field("2g", description="docker --shm-size")
    ipc: Literal["host"] | None = Field(None, description="docker --ipc")
    models: Literal["mount", "hub"] = Field(
        "mount", description="mount: downloaded checkpoints are mounted read-only in the container; hub: configs "
                             "name hf:// sources by repo id and the container downloads them (where the framework can)")
    mount_root: str = Field("/hf-models", pattern=r"^/",
                            description="where mounted checkpoints appear in the container")
    hf_cache: str | None = Field(None, description="host dir mounted at /root/.cache/huggingface")
    env: dict[str, str] = Field(default_factory=dict, description="container environment (never secrets)")

    @field_validator("env")
    @classmethod
    def _no_secrets(cls, value: dict[str, str]) -> dict[str, str]:
        secret = [k for k in value if set(k.upper().split("_")) & {"TOKEN", "SECRET", "PASSWORD", "KEY"}]
        if secret:
            raise ValueError(f"{', '.join(secret)}: secrets are passed from the environment, not the profile")
        return value

    @model_validator(mode="after")
    def _image_known(self) -> ContainerBackendConfig:
        self.release()  # an image whose framework version cannot be established is refused at load
        return self

    @property
    def served_by(self) -> str:
        """What serves, as messages name it."""
        return f"image {self.image}"

    def image_info(self) -> ImageInfo | None:
        """The matrix's entry for `image`, None for an image it does not know (framework_version given)."""
        try:
            info = image_info(self.image)
        except ImageError:
            if self.framework_version is not None:
                return None
            raise
        if (info.family, info.flavor) not in self.image_kinds:
            kinds = " or ".join(family + (f" -{flavor}" if flavor else "") for family, flavor in self.image_kinds)
            raise ImageError(f"image {self.image} is not an image backend {self.kind!r} runs ({kinds})")
        return info

    def release(self) -> str:
        """The framework version inside the image (the matrix's, or framework_version for unknown images)."""
        try:
            info = self.image_info()
        except ImageError as err:
            raise FieldError("backend.image", f"{err}. Known images: {', '.join(self.known_images())}; or set "
                              "backend.framework_version for an image the matrix does not know") from None
        if info is None:
            return str(self.framework_version)
        try:
            version = info.version(self.framework)
        except ImageError as err:
            raise FieldError("backend.image", str(err)) from None
        if self.framework_version is not None and self.framework_version != version:
            raise FieldError("backend.framework_version",
                              f"image {self.image} ships {self.framework} {version} "
                              f"({info.pinned(self.framework).source}), not {self.framework_version}")
        return version

    def pinned_versions(self) -> dict[str, str]:
        """Every framework the image matrix lists for `image` (not only the one rendered for)."""
        info = self.image_info()
        if info is None:
            return {self.framework: str(self.framework_version)}
        return {fw: pin.version or "unknown" for fw, pin in sorted(info.pins.items())}

    def version_source(self) -> str:
        info = self.image_info()
        if info is None:
            return f"backend.framework_version of the profile ({self.framework_version})"
        return info.pinned(self.framework).source

    @classmethod
    def has_facts(cls, version: str) -> bool:
        """Whether specops knows what this backend may render for the framework at `version`."""
        return True

    @classmethod
    def known_images(cls) -> list[str]:
        """The images this backend can render for: known to the matrix, with facts for their version."""
        images = {image: version for family, flavor in cls.image_kinds
                  for image, version in known_images(cls.framework, family, flavor).items()}
        return [image for image, version in images.items() if cls.has_facts(version)]
