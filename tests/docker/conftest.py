"""A private dockerd for the session (started by tests/docker/start_dockerd.sh, stopped at the end)
and a tiny image made by `docker import` of a busybox-static rootfs."""
from __future__ import annotations

import io
import os
import shutil
import signal
import socket
import subprocess
import tarfile
import tempfile
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
APT_LINE = "apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y docker.io busybox-static"
BUSYBOX = Path("/bin/busybox")
TEST_IMAGE = "specops-test/busybox:1"
APPLETS = ("sh", "sleep", "echo", "cat", "env", "httpd", "nc", "mkdir", "ls", "true", "false", "touch")


def _busybox_is_static() -> bool:
    """Debian's busybox-static (not the dynamic busybox, which cannot run in an empty rootfs)."""
    try:
        status = subprocess.run(["dpkg-query", "-W", "-f=${Status}", "busybox-static"],
                                capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return BUSYBOX.exists()
    return "install ok installed" in status


def _missing() -> list[str]:
    missing = [b for b in ("dockerd", "containerd", "runc") if shutil.which(b) is None]
    if not _busybox_is_static():
        missing.append("busybox-static")
    return missing


def _connect(host: str, proc: subprocess.Popen, log: Path, deadline_s: float = 60.0):
    """A docker-py client once the daemon answers (the client asks the API version on creation)."""
    import docker

    start = time.monotonic()
    while time.monotonic() - start < deadline_s:
        if proc.poll() is not None:
            pytest.fail(f"dockerd exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            client = docker.DockerClient(base_url=host, timeout=60)
            if client.ping():
                return client
        except docker.errors.DockerException:
            pass
        time.sleep(0.2)
    pytest.fail(f"dockerd not answering after {deadline_s}s:\n{log.read_text()[-3000:]}")


def _unmount_under(root: Path) -> None:
    """dockerd leaves its bind of the host netns (<exec-root>/netns/default) mounted."""
    with open("/proc/self/mountinfo") as f:
        points = [line.split()[4] for line in f if line.split()[4].startswith(f"{root}/")]
    for point in sorted(points, reverse=True):
        subprocess.run(["umount", "-l", point], capture_output=True, timeout=10)


def _stop(proc: subprocess.Popen, timeout_s: float = 30.0) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


@pytest.fixture(scope="session")
def dockerd():
    """DOCKER_HOST of a dockerd private to this session; everything it ran is removed at the end."""
    if os.geteuid() != 0:
        pytest.fail("the docker tests start their own dockerd and need root")
    missing = _missing()
    if missing:
        pytest.fail(f"missing {', '.join(missing)}; install with: {APT_LINE}")
    root = Path(tempfile.mkdtemp(prefix="specops-dockerd-"))  # short: unix socket paths max 108 bytes
    host = f"unix://{root}/docker.sock"
    log = root / "dockerd.log"
    started = time.monotonic()
    with open(log, "wb") as out:
        proc = subprocess.Popen([str(HERE / "start_dockerd.sh"), str(root)], stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    mp = pytest.MonkeyPatch()
    client = None
    try:
        client = _connect(host, proc, log)
        print(f"\ndockerd ready in {time.monotonic() - started:.2f}s at {host}")
        mp.setenv("DOCKER_HOST", host)
        mp.delenv("DOCKER_CONTEXT", raising=False)
        yield client
    finally:
        mp.undo()
        if client is not None:
            try:
                for container in client.containers.list(all=True):
                    container.remove(force=True)
            except Exception:
                pass
            client.close()
        _stop(proc)
        _unmount_under(root)
        shutil.rmtree(root, ignore_errors=True)


def _rootfs_tar() -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for d in ("bin", "tmp", "etc", "www"):
            info = tarfile.TarInfo(d)
            info.type, info.mode = tarfile.DIRTYPE, 0o1777 if d == "tmp" else 0o755
            tar.addfile(info)
        tar.add(BUSYBOX.resolve(), arcname="bin/busybox")
        for applet in APPLETS:
            info = tarfile.TarInfo(f"bin/{applet}")
            info.type, info.linkname = tarfile.SYMTYPE, "busybox"
            tar.addfile(info)
        for name, text in (("etc/passwd", "root:x:0:0:root:/:/bin/sh\nnobody:x:65534:65534::/:/bin/sh\n"),
                           ("etc/group", "root:x:0:\nnogroup:x:65534:\n"), ("www/health", "ok\n")):
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


@pytest.fixture(scope="session")
def test_image(dockerd) -> str:
    """A ~2 MB image: busybox-static and its applets, imported (no registry, no build)."""
    repo, tag = TEST_IMAGE.split(":")
    dockerd.api.import_image_from_data(_rootfs_tar(), repository=repo, tag=tag, changes=["ENV PATH=/bin"])
    dockerd.images.get(TEST_IMAGE)
    return TEST_IMAGE


@pytest.fixture
def launcher(dockerd):
    from specops.launch import DockerLauncher

    return DockerLauncher()  # from DOCKER_HOST, as users run it


@pytest.fixture
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
