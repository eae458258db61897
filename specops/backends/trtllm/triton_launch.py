"""Starting tritonserver through TensorRT-LLM's launch_triton_server.py, on the profile's address.

The script has no address flags (it passes only ports: tensorrtllm_backend@v0.17.0 and TensorRT-LLM
triton_backend scripts/launch_triton_server.py, data/trtllm_engine.yaml and data/trtllm.yaml), so
tritonserver would listen on every interface of the host network. Its --tritonserver flag names the
binary mpirun starts: a wrapper that adds --http/grpc/metrics-address keeps the server on the
profile's address. The script returns once mpirun is spawned, so the container's main process then
lives exactly as long as tritonserver does: the launcher notices a server that dies.
"""
from __future__ import annotations

import shlex

WRAPPER = "specops-tritonserver"
TRITONSERVER = "/opt/tritonserver/bin/tritonserver"  # the script's --tritonserver default
IN_CONTAINER = f"/tmp/{WRAPPER}"


def loopback_wrapper(host: str) -> dict[str, str]:
    """The wrapper script, as a file rendered beside the repository."""
    flags = " ".join(f"--{kind}-address={shlex.quote(host)}" for kind in ("http", "grpc", "metrics"))
    script = f"#!/bin/sh\n# specops: tritonserver on the profile's address\nexec {TRITONSERVER} {flags} \"$@\"\n"
    return {WRAPPER: script}


def wrapper_steps(mounted_repo: str, launch_script: str, args: list[str]) -> list[str]:
    """Install the wrapper, launch through it, and wait while tritonserver runs (60 s for it to appear)."""
    return [
        f"install -m 0755 {mounted_repo}/{WRAPPER} {IN_CONTAINER}",
        shlex.join(["python3", launch_script, f"--tritonserver={IN_CONTAINER}", *args]),
        "for _ in $(seq 60); do pgrep -x tritonserver >/dev/null && break; sleep 1; done",
        "while pgrep -x tritonserver >/dev/null; do sleep 5; done",
    ]
