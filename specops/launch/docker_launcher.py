"""Run ContainerSpecs on a Docker engine through docker-py: servers and one-shot commands.

Every container carries `specops.managed=true` plus the spec's labels, its logs are saved into
the run directory before it is removed, stops are bounded (SIGTERM, then SIGKILL), and
`janitor()` removes what a killed run left behind. Secret values reach only the container's
environment: they are masked in saved logs and error messages and never logged.
"""
from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from specops.host.processes import teardown_quietly
from specops.launch import logs
from specops.launch.container import LABEL_MANAGED, LABEL_SECRET_NAMES, ContainerSpec
from specops.launch.describe import describe as describe_spec
from specops.launch.errors import (
    CommandFailed,
    CommandTimeout,
    ContainerExited,
    DockerUnavailable,
    ImageMissing,
    LaunchError,
    NotReady,
)
from specops.launch.image import ImageIdentity, identity_of
from specops.launch.preflight import daemon_hint, preflight_problems, start_hint

log = logging.getLogger("specops.launch")


@dataclass
class ContainerHandle:
    """A launched container. Holds no secret values, so it may be persisted or logged."""

    id: str
    name: str
    log_path: Path | None
    secret_names: tuple[str, ...] = ()
    removed: bool = False

    def record(self) -> dict[str, str]:
        return {"container_id": self.id, "container_name": self.name, "log_path": str(self.log_path or "")}


def device_requests(gpus) -> list:
    """`--gpus` as docker-py DeviceRequests: all -> count -1, N -> count N, ids -> device_ids."""
    from docker.types import DeviceRequest

    if gpus is None:
        return []
    if gpus == "all" or isinstance(gpus, int):
        return [DeviceRequest(count=-1 if gpus == "all" else gpus, capabilities=[["gpu"]])]
    return [DeviceRequest(device_ids=list(gpus), capabilities=[["gpu"]])]


def _environment(spec: ContainerSpec) -> dict[str, str]:
    env = dict(spec.env)
    for name in spec.secret_env:  # the container's environment, copied by name: not a setting of specops
        if name in os.environ:
            env[name] = os.environ[name]
        else:
            log.info("secret %s is not set in the environment; not passed to the container", name)
    return env


def create_kwargs(spec: ContainerSpec) -> dict:
    """docker-py `containers.create` arguments for a spec (secret values included: never log this)."""
    from docker.types import Mount as DockerMount
    from docker.types import Ulimit as DockerUlimit

    for mount in spec.mounts:
        if not mount.source.exists():
            raise LaunchError(f"mount source {mount.source} does not exist (for {mount.target})")
    return dict(
        image=spec.image, command=spec.command or None, name=spec.name, entrypoint=spec.entrypoint,
        environment=_environment(spec), labels=spec.all_labels(),
        mounts=[DockerMount(m.target, str(m.source.resolve()), type="bind", read_only=m.read_only)
                for m in spec.mounts],
        device_requests=device_requests(spec.gpus) or None, shm_size=spec.shm_size,
        ulimits=[DockerUlimit(name=u.name, soft=u.soft, hard=u.hard) for u in spec.ulimits] or None,
        network_mode=spec.network_mode, ipc_mode=spec.ipc_mode, working_dir=spec.workdir, user=spec.user,
        detach=True,
    )


class DockerLauncher:
    """Containers on the engine DOCKER_HOST points at (or the given docker-py client)."""

    def __init__(self, client=None, api_timeout_s: float = 60.0) -> None:
        self._client = client
        self._api_timeout_s = api_timeout_s

    @property
    def client(self):
        if self._client is None:
            import docker

            try:
                self._client = docker.from_env(timeout=int(self._api_timeout_s))
                self._client.ping()
            except docker.errors.DockerException as exc:
                raise DockerUnavailable(f"Docker daemon unreachable: {exc}. {daemon_hint()}") from exc
        return self._client

    def describe(self, spec: ContainerSpec) -> list[str]:
        return describe_spec(spec)

    def preflight(self, gpus: bool = False, images: tuple[str, ...] = ()) -> list[str]:
        """Problems that would stop a launch, each with its fix; empty when ready."""
        return preflight_problems(lambda: self.client, gpus=gpus, images=images)

    def image_identity(self, image: str) -> ImageIdentity:
        """`docker image inspect`'s Id and RepoDigests of a local image (specops/launch/image.py)."""
        import docker

        try:
            return identity_of(self.client.images.get(image).attrs, image)
        except docker.errors.ImageNotFound as exc:
            raise ImageMissing(f"image {image} is not present: run `docker pull {image}`") from exc

    def create(self, spec: ContainerSpec, log_path: Path) -> ContainerHandle:
        """Create the container without starting it."""
        import docker

        try:
            container = self.client.containers.create(**create_kwargs(spec))
        except docker.errors.ImageNotFound as exc:
            raise ImageMissing(f"image {spec.image} is not present: run `docker pull {spec.image}`") from exc
        except docker.errors.APIError as exc:
            raise LaunchError(f"cannot create container from {spec.image}: {exc.explanation or exc}") from exc
        handle = ContainerHandle(container.id, container.name, Path(log_path), tuple(spec.secret_env))
        log.info("created container %s (%s) from %s", handle.name, handle.id[:12], spec.image)
        return handle

    def start(self, spec: ContainerSpec, log_path: Path) -> ContainerHandle:
        """Create and start; on failure nothing is left behind."""
        import docker

        handle = self.create(spec, log_path)
        try:
            self.client.containers.get(handle.id).start()
        except docker.errors.APIError as exc:
            teardown_quietly(lambda: self.stop(handle, timeout_s=5), f"removing {handle.name}")
            hint = start_hint(str(exc), spec)
            reason = exc.explanation or exc
            raise LaunchError(f"cannot start container {handle.name}: {reason}. {hint}".strip()) from exc
        log.info("started container %s; logs -> %s", handle.name, handle.log_path)
        return handle

    def _exited(self, handle: ContainerHandle) -> int | None:
        """Exit code if the container is no longer running, else None."""
        import docker

        try:
            container = self.client.containers.get(handle.id)
        except docker.errors.NotFound:
            return -1
        state = container.attrs.get("State", {})
        return state.get("ExitCode", -1) if state.get("Status") in ("exited", "dead") else None

    def state(self, handle: ContainerHandle) -> str | None:
        """Why the container cannot serve (gone, exited, paused, restarting); None while it runs."""
        import docker

        try:
            state = self.client.containers.get(handle.id).attrs.get("State", {})
        except docker.errors.NotFound:
            return "was removed"
        status = state.get("Status")
        if status in ("exited", "dead"):
            killed = " (OOM-killed)" if state.get("OOMKilled") else ""
            return f"exited with code {state.get('ExitCode', '?')}{killed}"
        if status == "paused":
            return "is paused: it answers nothing until unpaused"
        if status not in ("running", "created"):
            return f"is {status}"
        return None

    def text(self, handle: ContainerHandle) -> str:
        """The container's output so far, secrets redacted ("" once it is gone)."""
        import docker

        try:
            return logs.container_text(self.client.containers.get(handle.id), handle.secret_names)
        except docker.errors.NotFound:
            return ""

    def wait_ready(self, handle: ContainerHandle, probe: Callable[[], bool], deadline_s: float,
                   poll_s: float = 1.0) -> float:
        """Poll probe until true (returns seconds taken); fail early if the container exits."""
        started = time.monotonic()
        while True:
            code = self._exited(handle)
            if code is not None:
                text = self.text(handle)
                logs.save(handle.log_path, text)
                raise ContainerExited(f"container {handle.name} exited with code {code} before it was ready; "
                                      f"log {handle.log_path}, last lines:\n{logs.tail(text)}")
            try:
                if probe():
                    return time.monotonic() - started
            except Exception as exc:  # a probe that raises means "not yet"
                log.debug("probe for %s: %s", handle.name, exc)
            if time.monotonic() - started > deadline_s:
                raise NotReady(f"container {handle.name} not ready after {deadline_s:.0f}s; "
                               f"last lines:\n{logs.tail(self.text(handle))}")
            time.sleep(poll_s)

    def stop(self, handle: ContainerHandle, timeout_s: float = 30.0) -> None:
        """SIGTERM, SIGKILL after timeout_s, save logs into handle.log_path, remove. Idempotent."""
        import docker
        import requests

        if handle.removed:
            return
        try:
            container = self.client.containers.get(handle.id)
        except docker.errors.NotFound:
            handle.removed = True
            return
        try:
            container.stop(timeout=max(0, int(timeout_s)))
        except (docker.errors.APIError, requests.exceptions.RequestException) as exc:
            log.warning("stopping %s: %s; killing it", handle.name, exc)
        try:
            container.reload()
        except docker.errors.NotFound:
            handle.removed = True
            return
        if container.status not in ("exited", "dead", "created"):
            try:
                container.kill()
            except docker.errors.APIError as exc:
                log.warning("killing %s: %s", handle.name, exc)
        if handle.log_path is not None:
            logs.save(handle.log_path, logs.container_text(container, handle.secret_names))
        with suppress(docker.errors.NotFound):
            container.remove(force=True)
        handle.removed = True
        log.info("removed container %s; logs saved to %s", handle.name, handle.log_path)

    def run(self, spec: ContainerSpec, log_path: Path, timeout_s: float, check: bool = True) -> int:
        """Run a one-shot command to completion: bounded, killed on timeout or interrupt, logs saved, removed."""
        import requests

        handle = self.start(spec, log_path)
        code: int | None = None
        try:
            try:
                code = int(self.client.containers.get(handle.id).wait(timeout=timeout_s)["StatusCode"])
            except requests.exceptions.RequestException:  # ReadTimeout or ConnectionError(ReadTimeoutError)
                code = None
        except BaseException:
            teardown_quietly(lambda: self.stop(handle, timeout_s=0), f"removing {handle.name}")
            raise
        self.stop(handle, timeout_s=0 if code is None else 5)
        text = handle.log_path.read_text() if handle.log_path.exists() else ""
        if code is None:
            raise CommandTimeout(f"{spec.image} {' '.join(spec.command)[:200]} ran past {timeout_s:.0f}s and was "
                                 f"killed; log {handle.log_path}, last lines:\n{logs.tail(text)}")
        log.info("container command in %s exited with %d", handle.name, code)
        if code != 0 and check:
            raise CommandFailed(f"{spec.image} {' '.join(spec.command)[:200]} exited with {code}; "
                                f"log {handle.log_path}, last lines:\n{logs.tail(text)}", code)
        return code

    def janitor(self, labels: dict[str, str] | None = None, log_dir: Path | None = None,
                timeout_s: float = 10.0) -> int:
        """Remove specops containers matching labels (all of them when None); logs go to log_dir."""
        wanted = [f"{LABEL_MANAGED}=true", *(f"{k}={v}" for k, v in (labels or {}).items())]
        found = self.client.containers.list(all=True, filters={"label": wanted})
        for container in found:
            log_path = Path(log_dir) / f"{container.name}.log" if log_dir else None
            secrets = tuple(filter(None, container.labels.get(LABEL_SECRET_NAMES, "").split(",")))
            log.info("janitor: removing leftover container %s (%s)", container.name, container.short_id)
            self.stop(ContainerHandle(container.id, container.name, log_path, secrets), timeout_s=timeout_s)
        return len(found)
