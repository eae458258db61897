"""The two sides an `upgrade/<profile>` deployment runs unless told otherwise, derived from the version data.

A GPU profile: before, the newest image the version matrix knows whose framework is older than the one the
profile pins (and that serves the profile); after, the profile as shipped: "what changes if we take the
image we pin now". A CPU profile: before, the embedded runtime; after, the profile's own engine. A
profile with neither (the embedded runtime's own, an image with nothing older) gets no deployment.
"""
from __future__ import annotations

from specops.backends import needs_gpu
from specops.backends.container.config import ContainerBackendConfig
from specops.backends.spec import BackendConfig
from specops.profile.errors import ProfileError
from specops.profile.schema import Profile
from specops.upgrade.sides import load_sides
from specops.versions.images import image_info
from specops.versions.store import parse

# The engine every CPU engine is checked against: specops' own runtime, which serves every method, drafting K tokens
# every step as vLLM's engines do (its default adaptive length picks lengths by measured step time, so what it drafts
# at each position would depend on the host's load, not on the engine).
CPU_REFERENCE_KIND = "local"
CPU_REFERENCE = f"backend={{kind: {CPU_REFERENCE_KIND}, draft_length: fixed}}"
# Older images tried, newest first, before giving up on finding one that serves the profile.
MAX_TRIED = 5


def older_images(config: BackendConfig) -> list[str]:
    """Known images of the config's backend whose framework version is older than the config's, one per
    version, newest first."""
    if not isinstance(config, ContainerBackendConfig):
        return []
    current = parse(config.release())
    newest: dict[str, str] = {}  # framework version -> its newest image
    for image in type(config).known_images():
        version = image_info(image).version(config.framework)
        if parse(version) < current and image > newest.get(version, ""):
            newest[version] = image
    return [newest[v] for v in sorted(newest, key=parse, reverse=True)]


def default_sides(profile: Profile) -> tuple[list[str], list[str]] | None:
    """(before, after) backend overrides for the profile's upgrade check, or None when there is no pair."""
    if needs_gpu(profile.backend):
        candidates = [[f"backend.image={image}"] for image in older_images(profile.backend)[:MAX_TRIED]]
    elif profile.backend.kind == CPU_REFERENCE_KIND:  # the reference engine itself, in any of its settings
        return None
    else:
        candidates = [[CPU_REFERENCE]]
    for before in candidates:
        try:
            load_sides(profile.name, before, [], [])
        except ProfileError:  # the older engine does not serve the profile, or it is the same engine
            continue
        return before, []
    return None
