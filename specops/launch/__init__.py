"""Containers for GPU backends: specs, the `docker run` description, and the Docker launcher.

Prefect-free; docker-py is imported only when a launcher talks to a daemon, so `specops plan`
can describe containers on machines without Docker.
"""
from specops.launch.container import (
    LABEL_FLOW_RUN,
    LABEL_MANAGED,
    LABEL_PROFILE,
    LABEL_ROLE,
    LABEL_RUN,
    ContainerSpec,
    Mount,
    Ulimit,
    run_labels,
    triton_ulimits,
)
from specops.launch.describe import describe, describe_line
from specops.launch.docker_launcher import ContainerHandle, DockerLauncher
from specops.launch.errors import (
    CommandFailed,
    CommandTimeout,
    ContainerExited,
    DockerUnavailable,
    ImageMissing,
    LaunchError,
    NotReady,
)
from specops.launch.image import ImageIdentity

__all__ = [
    "LABEL_FLOW_RUN", "LABEL_MANAGED", "LABEL_PROFILE", "LABEL_ROLE", "LABEL_RUN", "CommandFailed", "CommandTimeout",
    "ContainerExited", "ContainerHandle", "ContainerSpec", "DockerLauncher", "DockerUnavailable", "ImageIdentity",
    "ImageMissing", "LaunchError", "Mount", "NotReady", "Ulimit", "describe", "describe_line", "run_labels",
    "triton_ulimits"]
