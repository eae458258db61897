"""The `docker run` command line equivalent to a ContainerSpec, for `specops plan` (no Docker needed)."""
from __future__ import annotations

import shlex

from specops.launch.container import ContainerSpec


def gpus_flag(gpus: object) -> list[str]:
    if gpus is None:
        return []
    if gpus == "all" or isinstance(gpus, int):
        return ["--gpus", str(gpus)]
    ids = ",".join(gpus)  # type: ignore[arg-type]
    # the CLI parses --gpus as CSV: several ids must be quoted inside the value
    return ["--gpus", f'"device={ids}"' if len(gpus) > 1 else f"device={ids}"]  # type: ignore[arg-type]


def describe(spec: ContainerSpec) -> list[str]:
    """argv of `docker run ...`; secrets appear as `-e NAME` (value taken from the caller's env)."""
    argv = ["docker", "run", "--rm"]
    if spec.name:
        argv += ["--name", spec.name]
    for key, value in sorted(spec.all_labels().items()):
        argv += ["--label", f"{key}={value}"]
    argv += gpus_flag(spec.gpus)
    if spec.shm_size:
        argv.append(f"--shm-size={spec.shm_size}")
    for ulimit in spec.ulimits:
        argv += ["--ulimit", ulimit.flag()]
    argv += ["--network", spec.network_mode]
    if spec.ipc_mode:
        argv += ["--ipc", spec.ipc_mode]
    for mount in spec.mounts:
        argv += ["-v", f"{mount.source}:{mount.target}" + (":ro" if mount.read_only else "")]
    for key, value in spec.env.items():
        argv += ["-e", f"{key}={value}"]
    for name in spec.secret_env:
        argv += ["-e", name]
    if spec.workdir:
        argv += ["-w", spec.workdir]
    if spec.user:
        argv += ["--user", spec.user]
    command = list(spec.command)
    if spec.entrypoint:
        argv += ["--entrypoint", spec.entrypoint[0]]
        command = [*spec.entrypoint[1:], *command]
    return [*argv, spec.image, *command]


def describe_line(spec: ContainerSpec) -> str:
    """The same command as one shell-quoted line."""
    return shlex.join(describe(spec))
