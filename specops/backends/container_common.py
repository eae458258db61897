"""What the containerised backends (vllm, trtllm, trtllm-engine, trtllm-serve) share: image tags,
where models live inside the container, the container spec handed to the Docker launcher, the
served handle, and plain HTTP to servers on loopback.

Containers go through the Docker launcher (`specops.launch`), imported only when used so
that the config modules stay light for the profile loader.
"""
from __future__ import annotations

import json
import re
import shlex
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specops.sources.base import ModelArtifact
from specops.sources.schemes import parse_source
from specops.triton.endpoint import Endpoint

HF_CACHE_IN_CONTAINER = "/root/.cache/huggingface"
HF_SECRET_ENV = ("HF_TOKEN",)  # passed by name only: the launcher copies it from our environment
SIDECAR = "specops-container.json"  # written beside the models: the mounts launch() needs
PLACEHOLDER = "<{role} checkpoint from the download step>"
_RELEASE = re.compile(r":(?P<yy>\d{2})\.(?P<mm>\d{2})(?:[.-]|$)")


def image_release(image: str) -> tuple[int, int] | None:
    """(yy, mm) of an NGC `tritonserver:YY.MM-...` tag, None when the tag says no release."""
    match = _RELEASE.search(image)
    return (int(match["yy"]), int(match["mm"])) if match else None


@dataclass(frozen=True)
class PlacedModel:
    """How an engine config names a model, and the bind mount that makes that name resolve."""

    ref: str  # hub id (the container downloads it) or the path inside the container
    host: str | None = None  # None: nothing to mount (hub access)
    target: str | None = None


def place_model(source: str, artifact: ModelArtifact | None, access: str, mount_root: str, role: str) -> PlacedModel:
    """`hub`: hf:// sources are named by repo id; anything else is mounted at <mount_root>/<name>."""
    ref = parse_source(source)
    if access == "hub" and ref.scheme == "hf":
        if ref.revision:
            raise ValueError(f"{role} {source}: a pinned revision needs `models: mount` (the container "
                             "would download the default branch)")
        return PlacedModel(ref.name)
    name = Path(ref.name).name or role
    inside = f"{mount_root.rstrip('/')}/{name}"
    host = str(artifact.path) if artifact is not None else PLACEHOLDER.format(role=role)
    return PlacedModel(inside, host, inside)


def draft_source(profile, draft: ModelArtifact | None) -> str:
    """The draft's source string; a trained draft has none and is mounted from the cache like a path."""
    return profile.draft.source or (str(draft.path) if draft is not None else "trained-draft")


def write_files(out_dir: Path, files: dict[str, str]) -> None:
    for rel, content in files.items():
        path = Path(out_dir) / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")


def sidecar(mounts: list[tuple[str, str]]) -> str:
    return json.dumps({"mounts": [list(m) for m in mounts]}, indent=2) + "\n"


def parse_sidecar(text: str) -> list[tuple[str, str]]:
    return [(str(h), str(t)) for h, t in json.loads(text)["mounts"]]


def read_sidecar(repo: Path) -> list[tuple[str, str]]:
    path = Path(repo) / SIDECAR
    return parse_sidecar(path.read_text()) if path.is_file() else []


def _gpus(value: str):
    """The profile's `gpus` string as the launcher's GpuRequest: "all", a count, or device ids."""
    if value in ("", "none"):
        return None
    if value == "all":
        return "all"
    return int(value) if value.isdigit() else [v.strip() for v in value.split(",") if v.strip()]


def container_spec(*, image: str, command: list[str], mounts: list[tuple[str, str, bool]], shm_size: str | None,
                   labels: dict[str, str], gpus: str = "all", env: dict[str, str] | None = None,
                   secret_env: tuple[str, ...] = HF_SECRET_ENV, ipc_mode: str | None = None):
    """The launcher's ContainerSpec: host network, the tutorials' ulimits, HF_TOKEN by name only."""
    from specops.launch import ContainerSpec, Mount  # noqa: PLC0415

    return ContainerSpec(image=image, command=list(command), env=dict(env or {}), secret_env=tuple(secret_env),
                         mounts=[Mount(Path(s), t, ro) for s, t, ro in mounts], gpus=_gpus(gpus),
                         shm_size=shm_size, network_mode="host", ipc_mode=ipc_mode, labels=dict(labels))


def backend_labels(profile: str, variant: str) -> dict[str, str]:
    from specops.launch import LABEL_PROFILE, LABEL_ROLE  # noqa: PLC0415

    return {LABEL_PROFILE: profile, LABEL_ROLE: f"server-{variant}"}


def describe(spec) -> list[str]:
    """The `docker run` argv of a spec (no Docker needed)."""
    from specops.launch import describe as describe_spec  # noqa: PLC0415

    return describe_spec(spec)


def preflight(image: str | None = None) -> list[str]:
    """What is missing to run a GPU container here: Docker daemon, NVIDIA GPU (the launcher's check)."""
    from specops.launch import DockerLauncher  # noqa: PLC0415

    return list(DockerLauncher().preflight(gpus=True))


def plan_command(spec) -> str:
    return shlex.join(describe(spec))


def _opener():
    return urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never a proxy


def http_ok(url: str, timeout_s: float = 2.0) -> bool:
    try:
        with _opener().open(url, timeout=timeout_s) as resp:
            return 200 <= resp.status < 300
    except OSError:
        return False


def get_json(url: str, timeout_s: float) -> Any:
    with _opener().open(url, timeout=timeout_s) as resp:
        return json.loads(resp.read().decode("utf-8", "replace") or "null")


def post_json(url: str, body: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with _opener().open(req, timeout=timeout_s) as resp:
        return json.loads(resp.read().decode("utf-8", "replace"))


@dataclass
class ContainerServer:
    """A ready server inside a container started by the Docker launcher."""

    launcher: Any
    handle: Any
    log_path: Path
    image: str
    stop_timeout_s: float
    endpoint: Endpoint | None = None  # Triton's ports, for the backends that pick them

    def stop(self, timeout_s: float | None = None) -> None:
        self.launcher.stop(self.handle, self.stop_timeout_s if timeout_s is None else timeout_s)  # idempotent

    def record(self) -> dict[str, Any]:
        # No create_time: the process janitor never signals a container pid; it stops the
        # container by id (specops.janitor), and the launcher's janitor finds it by label.
        out = {"pid": 0, "tool": "docker", "image": self.image, **self.handle.record()}
        if self.endpoint is not None:
            out["ports"] = [self.endpoint.http_port, self.endpoint.grpc_port, self.endpoint.metrics_port]
        return out


def launch_container(spec, log_path: Path, probe: Callable[[], bool], deadline_s: float, stop_timeout_s: float,
                     *, endpoint: Endpoint | None = None, server_cls: type[ContainerServer] = ContainerServer):
    """Start the container and wait until probe() holds; stop it on any failure."""
    from specops.launch import DockerLauncher  # noqa: PLC0415

    launcher = DockerLauncher()
    handle = launcher.start(spec, log_path)
    try:
        launcher.wait_ready(handle, probe, deadline_s)
    except BaseException:
        launcher.stop(handle, stop_timeout_s)
        raise
    return server_cls(launcher, handle, log_path, spec.image, stop_timeout_s, endpoint)
