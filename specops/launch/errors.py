"""Launcher errors; each message says what to do next. Messages never carry secret values."""
from __future__ import annotations


class LaunchError(RuntimeError):
    """A container could not be created, started, readied or run."""


class DockerUnavailable(LaunchError):
    """The Docker daemon cannot be reached."""


class ImageMissing(LaunchError):
    """The image is not present locally."""


class ContainerExited(LaunchError):
    """A server container exited before it became ready."""


class NotReady(LaunchError):
    """A server container did not become ready within its deadline."""


class CommandFailed(LaunchError):
    """A one-shot container command exited non-zero."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class CommandTimeout(LaunchError):
    """A one-shot container command ran past its time limit and was killed."""
