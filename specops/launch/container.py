"""What a container needs to run: image, command, GPUs, mounts, limits, labels, secret names.

Defaults follow NVIDIA's Triton TensorRT-LLM speculative decoding tutorial:
`docker run --net host --shm-size=2g --ulimit memlock=-1 --ulimit stack=67108864 --gpus all`.
Secret values are never stored here: `secret_env` holds variable names, read from the
launcher's environment at start and passed only as container environment.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from specops.fields import GpuRequest
from specops.host.tracking import current_owner

LABEL_MANAGED = "specops.managed"
LABEL_RUN = "specops.run"
LABEL_PROFILE = "specops.profile"
LABEL_ROLE = "specops.role"
LABEL_SECRET_NAMES = "specops.secret_env"
LABEL_FLOW_RUN = "specops.flow_run"  # the run that started it (servers and one-shot builds alike)

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class Mount:
    """A bind mount of a host path into the container."""

    source: Path
    target: str
    read_only: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "source", Path(self.source))
        if not str(self.target).startswith("/"):
            raise ValueError(f"mount target must be an absolute container path, got {self.target!r}")


@dataclass(frozen=True)
class Ulimit:
    name: str
    soft: int
    hard: int

    def flag(self) -> str:
        value = str(self.soft) if self.soft == self.hard else f"{self.soft}:{self.hard}"
        return f"{self.name}={value}"


def triton_ulimits() -> tuple[Ulimit, ...]:
    """`--ulimit memlock=-1 --ulimit stack=67108864`, as NVIDIA's Triton docs run their containers."""
    return (Ulimit("memlock", -1, -1), Ulimit("stack", 67108864, 67108864))


def run_labels(run_id: str, profile: str | None = None, role: str | None = None) -> dict[str, str]:
    """The labels that tie a container to a run (the janitor finds leftovers by them)."""
    labels = {LABEL_RUN: run_id}
    if profile:
        labels[LABEL_PROFILE] = profile
    if role:
        labels[LABEL_ROLE] = role
    return labels


@dataclass
class ContainerSpec:
    """One container: either a server (start/wait_ready/stop) or a one-shot command (run)."""

    image: str
    command: list[str] = field(default_factory=list)
    name: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    secret_env: tuple[str, ...] = ()
    mounts: list[Mount] = field(default_factory=list)
    gpus: GpuRequest = None
    shm_size: str | None = "2g"
    ulimits: tuple[Ulimit, ...] = field(default_factory=triton_ulimits)
    network_mode: str = "host"
    ipc_mode: str | None = None
    workdir: str | None = None
    entrypoint: list[str] | None = None
    user: str | None = None
    labels: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.image:
            raise ValueError("a container needs an image")
        self.command = [str(c) for c in self.command]
        self.secret_env = tuple(self.secret_env)
        for name in (*self.env, *self.secret_env):
            if not _ENV_NAME.match(name):
                raise ValueError(f"invalid environment variable name {name!r}")
        both = sorted(set(self.env) & set(self.secret_env))
        if both:
            raise ValueError(f"{', '.join(both)} listed both as plain env and as secret env")
        for reserved in (LABEL_MANAGED, LABEL_SECRET_NAMES):
            if reserved in self.labels:
                raise ValueError(f"label {reserved} is set by the launcher")
        self._check_gpus()

    def _check_gpus(self) -> None:
        gpus = self.gpus
        if gpus is None or gpus == "all":
            return
        if isinstance(gpus, bool | str) or (isinstance(gpus, int) and gpus < 1):
            raise ValueError(f"gpus must be None, 'all', a positive count or device ids; got {gpus!r}")
        if isinstance(gpus, list):
            if not gpus:
                raise ValueError("gpus: an empty device list; use None for no GPU")
            self.gpus = [str(g) for g in gpus]

    def all_labels(self) -> dict[str, str]:
        """The spec's labels plus `specops.managed=true`, which every launched container carries,
        and the secret variables' names (never values), so a janitor can mask them in logs."""
        labels = {LABEL_MANAGED: "true", **{k: str(v) for k, v in self.labels.items()}}
        if owner := current_owner():  # so the run's hooks find its containers, even unrecorded ones
            labels[LABEL_FLOW_RUN] = owner
        if self.secret_env:
            labels[LABEL_SECRET_NAMES] = ",".join(self.secret_env)
        return labels
