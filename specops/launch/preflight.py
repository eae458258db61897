"""What would stop a Docker launch here, each problem with its fix."""
from __future__ import annotations

import shutil
from collections.abc import Callable, Iterable
from pathlib import Path

from specops.settings import env_name, settings


def daemon_hint() -> str:
    s, var = settings(), env_name("docker_host")
    where = s.docker_host if "docker_host" in s.model_fields_set else f"{s.docker_host} ({var} unset)"
    return (f"Looked at {where}. Start the daemon (`systemctl start docker`, or run `dockerd` as root) "
            f"or set {var} to the socket of a running one, e.g. {var}=unix:///run/docker.sock")


def gpu_hint() -> str:
    return ("GPU containers need an NVIDIA driver and the NVIDIA Container Toolkit on the Docker host: "
            "install nvidia-container-toolkit, run `nvidia-ctk runtime configure --runtime=docker` "
            "and restart dockerd; check with `docker run --rm --gpus all ubuntu nvidia-smi`")


def start_hint(error: str, spec) -> str:
    """What to do about a container the engine created but could not start."""
    text = error.lower()
    if spec.gpus is not None and ("gpu" in text or "device driver" in text):
        return gpu_hint()
    if "rlimit" in text:
        limits = " ".join(f"--ulimit {u.flag()}" for u in spec.ulimits)
        return (f"the engine could not apply {limits}: dockerd cannot raise a limit above its own hard limit "
                "(it runs without CAP_SYS_RESOURCE, or with a low LimitMEMLOCK): run dockerd with "
                "LimitMEMLOCK=infinity (systemd) / `ulimit -l unlimited`, or lower the spec's ulimits")
    return ""


def _local_daemon() -> bool:
    return settings().docker_host.startswith(("unix://", "npipe://"))


def gpu_problems(info: dict) -> list[str]:
    """No NVIDIA runtime known to the daemon, or (local daemon) no NVIDIA device on this host."""
    problems = []
    runtimes = info.get("Runtimes") or {}
    has_hook = shutil.which("nvidia-container-runtime-hook") is not None
    if "nvidia" not in runtimes and not has_hook:
        problems.append(f"the Docker daemon has no NVIDIA runtime (runtimes: {', '.join(sorted(runtimes)) or 'none'}) "
                        f"and nvidia-container-runtime-hook is not on PATH. {gpu_hint()}")
    if _local_daemon() and shutil.which("nvidia-smi") is None and not Path("/dev/nvidia0").exists():
        problems.append("no NVIDIA GPU is visible on this host (no /dev/nvidia0, no nvidia-smi): run GPU profiles "
                        "on a GPU worker (a Prefect work pool on a GPU machine), or use `specops plan` here")
    return problems


def preflight_problems(get_client: Callable[[], object], gpus: bool = False, images: Iterable[str] = ()) -> list[str]:
    """Problems with their fixes; empty when a launch can proceed."""
    import docker

    from specops.launch.errors import DockerUnavailable

    try:
        client = get_client()
        info = client.info()
    except (DockerUnavailable, docker.errors.DockerException) as exc:
        message = str(exc)
        return [message if isinstance(exc, DockerUnavailable) else f"Docker daemon unreachable: {exc}. {daemon_hint()}"]
    problems = gpu_problems(info) if gpus else []
    for image in images:
        try:
            client.images.get(image)
        except docker.errors.ImageNotFound:
            problems.append(f"image {image} is not present: run `docker pull {image}`")
    return problems
