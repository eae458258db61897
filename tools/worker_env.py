"""Pull step, run by a Prefect worker in the clone of the deployed commit: does the worker's Python
have what this commit's pyproject.toml pins? Met requirements are left alone; only the missing or
mismatched ones are installed, with that Python's pip.

    python3 tools/worker_env.py [--dry-run]

The process worker runs the flow with its own interpreter: the one running Prefect's workspace
supervisor, which runs this step as a child. So the check runs there (this script re-executes itself
under its parent's interpreter), whichever python3 PATH finds. specops itself is not installed: the
worker puts the clone first on the flow run's PYTHONPATH (prefect/runner/_workspace_starter.py
workspace_environment), so a `specops` installed from another checkout is not what runs.

Flow runs starting together on one host share the worker's venv: the check and the install hold an
exclusive lock on <sys.prefix>/.specops-worker-env.lock, and a run that waited checks again, so a
requirement is installed once. A commit that pins another `prefect` than the worker runs is refused:
pip would replace the running worker's Prefect under it; the operator upgrades the worker instead.
"""
from __future__ import annotations

import fcntl
import os
import platform
import subprocess
import sys
import time
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path

IN_TARGET = "--in-target"
LOCK_NAME = ".specops-worker-env.lock"
# pip gets this long, and a run waiting for another's install a little longer; both are errors then
INSTALL_TIMEOUT_S = 1800
LOCK_WAIT_S = INSTALL_TIMEOUT_S + 300
# Requirements no flow run may change: the worker's own packages, imported by the running worker
WORKER_OWN = ("prefect",)


def worker_python() -> str:
    """The interpreter of the Prefect process that started this step, else this one."""
    try:
        argv = Path(f"/proc/{os.getppid()}/cmdline").read_bytes().decode().split("\0")
    except OSError:
        return sys.executable
    for flag, module in zip(argv, argv[1:]):
        if flag == "-m" and module.startswith("prefect.") and os.path.isabs(argv[0]):
            return argv[0]
    return sys.executable


def unmet(requirements: list[str]) -> list[tuple[str, str]]:
    """(requirement, what is installed instead) for each requirement this interpreter does not meet."""
    from packaging.requirements import Requirement

    found = []
    for text in requirements:
        req = Requirement(text)
        if req.marker is not None and not req.marker.evaluate():
            continue
        if why := _unmet(req):
            found.append((text, why))
    return found


def _unmet(req) -> str | None:
    from packaging.requirements import Requirement

    try:
        dist = metadata.distribution(req.name)
    except metadata.PackageNotFoundError:
        return "not installed"
    if req.specifier and not req.specifier.contains(dist.version, prereleases=True):
        return f"{dist.version} installed"
    for extra in sorted(req.extras):  # one level: the extra's own requirements are present and in range
        for dep in map(Requirement, dist.requires or []):
            if dep.marker is None or "extra" not in str(dep.marker) or not dep.marker.evaluate({"extra": extra}):
                continue
            if why := _unmet(Requirement(f"{dep.name}{dep.specifier}")):
                return f"[{extra}] needs {dep.name}{dep.specifier}: {why}"
    return None


class LockUnavailable(Exception):
    pass


@contextmanager
def install_lock(path: Path, timeout_s: float = LOCK_WAIT_S):
    """An exclusive flock on `path`, waited for at most timeout_s, saying whom it waits for."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o664)
    except OSError as err:
        raise LockUnavailable(f"cannot lock {path} ({err}): the worker's environment must be writable") from None
    try:
        deadline, said = time.monotonic() + timeout_s, False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not said:
                    holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "another process"
                    print(f"worker_env: waiting for {path}: {holder} is changing {sys.prefix}", flush=True)
                    said = True
                if time.monotonic() > deadline:
                    raise LockUnavailable(f"{path} still held after {timeout_s:.0f}s: another flow run's "
                                          "install has not finished") from None
                time.sleep(0.2)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} on {platform.node()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock


def refused(missing: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The worker's own packages among the missing requirements: not installed by a flow run."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    own = {canonicalize_name(name) for name in WORKER_OWN}
    return [(text, why) for text, why in missing if canonicalize_name(Requirement(text).name) in own]


def check(pyproject: Path, dry_run: bool) -> int:
    import tomllib

    project = tomllib.loads(pyproject.read_text())["project"]
    from packaging.specifiers import SpecifierSet

    wanted = project.get("requires-python")
    if wanted and not SpecifierSet(wanted).contains(platform.python_version()):
        print(f"worker_env: {pyproject} needs Python {wanted}; the worker runs {platform.python_version()} "
              f"({sys.executable}): start the worker with a matching interpreter", file=sys.stderr)
        return 1
    requirements = project.get("dependencies", [])
    missing = unmet(requirements)
    if not missing:  # the usual case: nothing to change, no lock needed
        return _met(requirements, pyproject)
    if dry_run or refused(missing):
        return _install(missing, pyproject, dry_run=dry_run)
    lock = Path(sys.prefix) / LOCK_NAME
    try:
        with install_lock(lock):
            # again: the run that held the lock may have installed them meanwhile
            missing = unmet(requirements)
            return _install(missing, pyproject, dry_run=False) if missing else _met(requirements, pyproject)
    except LockUnavailable as err:
        print(f"worker_env: {err}; nothing installed ({', '.join(text for text, _ in missing)} missing)",
              file=sys.stderr)
        return 1


def _met(requirements: list[str], pyproject: Path) -> int:
    print(f"worker_env: {sys.executable} meets the {len(requirements)} requirements of {pyproject}: nothing to install")
    return 0


def _install(missing: list[tuple[str, str]], pyproject: Path, dry_run: bool) -> int:
    for text, why in missing:
        print(f"worker_env: {text}: {why}")
    if own := refused(missing):
        print(f"worker_env: {pyproject} pins {', '.join(f'{text} ({why})' for text, why in own)}: the worker runs "
              "on it, and a flow run does not change the running worker's packages, so nothing was installed. "
              f"Upgrade the worker: {sys.executable} -m pip install {' '.join(repr(text) for text, _ in own)}, "
              "then restart `prefect worker start`", file=sys.stderr)
        return 1
    cmd = [sys.executable, "-m", "pip", "install", "--no-input", *(text for text, _ in missing)]
    print(f"worker_env: {'would run' if dry_run else 'running'}: {' '.join(cmd)}", flush=True)
    if dry_run:
        return 0
    try:
        return subprocess.run(cmd, timeout=INSTALL_TIMEOUT_S).returncode
    except subprocess.TimeoutExpired:
        print(f"worker_env: pip did not finish within {INSTALL_TIMEOUT_S}s (killed): {' '.join(cmd)}", file=sys.stderr)
        return 1


def main(argv: list[str]) -> int:
    dry_run = "--dry-run" in argv
    if IN_TARGET not in argv:
        target = worker_python()
        if target != sys.executable:
            os.execv(target, [target, os.path.abspath(__file__), IN_TARGET, *argv])
    return check(Path(__file__).resolve().parents[1] / "pyproject.toml", dry_run)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
