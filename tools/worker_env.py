"""Pull step, run by a Prefect worker in the clone of the deployed commit: does the worker's Python
have what this commit's pyproject.toml pins? Met requirements are left alone; only the missing or
mismatched ones are installed, with that Python's pip.

    python3 tools/worker_env.py [--dry-run]

The process worker runs the flow with its own interpreter: the one running Prefect's workspace
supervisor, which runs this step as a child. So the check runs there (this script re-executes itself
under its parent's interpreter), whichever python3 PATH finds. specops itself is not installed: the
worker puts the clone first on the flow run's PYTHONPATH (prefect/runner/_workspace_starter.py
workspace_environment), so a `specops` installed from another checkout is not what runs.
"""
from __future__ import annotations

import os
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path

IN_TARGET = "--in-target"


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


def check(pyproject: Path, dry_run: bool) -> int:
    import tomllib

    project = tomllib.loads(pyproject.read_text())["project"]
    from packaging.specifiers import SpecifierSet

    wanted = project.get("requires-python")
    if wanted and not SpecifierSet(wanted).contains(platform.python_version()):
        print(f"worker_env: {pyproject} needs Python {wanted}; the worker runs {platform.python_version()} "
              f"({sys.executable}): start the worker with a matching interpreter", file=sys.stderr)
        return 1
    missing = unmet(project.get("dependencies", []))
    if not missing:
        print(f"worker_env: {sys.executable} meets the {len(project.get('dependencies', []))} requirements of "
              f"{pyproject}: nothing to install")
        return 0
    for text, why in missing:
        print(f"worker_env: {text}: {why}")
    cmd = [sys.executable, "-m", "pip", "install", "--no-input", *(text for text, _ in missing)]
    print(f"worker_env: {'would run' if dry_run else 'running'}: {' '.join(cmd)}", flush=True)
    return 0 if dry_run else subprocess.call(cmd)


def main(argv: list[str]) -> int:
    dry_run = "--dry-run" in argv
    if IN_TARGET not in argv:
        target = worker_python()
        if target != sys.executable:
            os.execv(target, [target, os.path.abspath(__file__), IN_TARGET, *argv])
    return check(Path(__file__).resolve().parents[1] / "pyproject.toml", dry_run)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
