"""`docker run` lines for `specops plan`: the flags NVIDIA's Triton tutorials use, secrets without values."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from specops.launch import ContainerSpec, Mount, describe, describe_line, run_labels


def _pairs(argv: list[str]) -> list[tuple[str, str]]:
    return list(zip(argv, argv[1:]))


def test_triton_defaults_match_the_tutorial_flags():
    # Triton tutorials, Feature_Guide/Speculative_Decoding/TRT-LLM/README.md:
    # docker run --rm -it --net host --shm-size=2g --ulimit memlock=-1 --ulimit stack=67108864 --gpus all ...
    argv = describe(ContainerSpec(image="nvcr.io/nvidia/tritonserver:25.01-trtllm-python-py3", gpus="all"))
    assert argv[:3] == ["docker", "run", "--rm"]
    assert ("--gpus", "all") in _pairs(argv)
    assert "--shm-size=2g" in argv
    assert ("--ulimit", "memlock=-1") in _pairs(argv) and ("--ulimit", "stack=67108864") in _pairs(argv)
    assert ("--network", "host") in _pairs(argv)
    assert argv[-1] == "nvcr.io/nvidia/tritonserver:25.01-trtllm-python-py3"


@pytest.mark.parametrize("gpus, flag", [(None, None), ("all", "all"), (2, "2"), (["1"], "device=1"),
                                        (["0", "3"], '"device=0,3"')])
def test_gpu_flag(gpus, flag):
    argv = describe(ContainerSpec(image="i", gpus=gpus))
    assert (("--gpus", flag) in _pairs(argv)) if flag else "--gpus" not in argv
    if flag and "," in flag:
        assert "--gpus '\"device=0,3\"'" in describe_line(ContainerSpec(image="i", gpus=gpus))


def test_mounts_env_secrets_workdir_command(monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_value_never_shown")
    spec = ContainerSpec(
        image="img:1", command=["python3", "/app/scripts/launch_triton_server.py", "--world_size=1"],
        env={"HF_HUB_OFFLINE": "1"}, secret_env=("HF_TOKEN",), workdir="/work", user="1000:1000",
        mounts=[Mount(Path("/data/models"), "/hf-models", read_only=True), Mount(Path("/data/engines"), "/engines")],
        labels=run_labels("run-1", "eagle-trtllm-engine", "server"))
    argv = describe(spec)
    assert ("-v", "/data/models:/hf-models:ro") in _pairs(argv)
    assert ("-v", "/data/engines:/engines") in _pairs(argv)
    assert ("-e", "HF_HUB_OFFLINE=1") in _pairs(argv)
    assert ("-e", "HF_TOKEN") in _pairs(argv)
    assert ("-w", "/work") in _pairs(argv) and ("--user", "1000:1000") in _pairs(argv)
    assert ("--label", "specops.run=run-1") in _pairs(argv)
    assert ("--label", "specops.managed=true") in _pairs(argv)
    assert argv[-4:] == ["img:1", "python3", "/app/scripts/launch_triton_server.py", "--world_size=1"]
    assert "hf_value_never_shown" not in describe_line(spec)


def test_entrypoint_and_ipc():
    argv = describe(ContainerSpec(image="i", entrypoint=["/bin/sh", "-c"], command=["echo hi"], ipc_mode="host"))
    assert ("--ipc", "host") in _pairs(argv)
    assert argv[-3:] == ["i", "-c", "echo hi"]
    assert ("--entrypoint", "/bin/sh") in _pairs(argv)


def test_describe_needs_no_docker():
    code = ("import sys; from specops.launch import ContainerSpec, describe; "
            "describe(ContainerSpec(image='i', gpus='all')); assert 'docker' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
