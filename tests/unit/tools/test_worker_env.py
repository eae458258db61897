"""tools/worker_env.py: the worker's Python is checked against the clone's pins; only what differs is installed."""
from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
spec = importlib.util.spec_from_file_location("worker_env", ROOT / "tools" / "worker_env.py")
worker_env = importlib.util.module_from_spec(spec)
spec.loader.exec_module(worker_env)


def test_this_venv_meets_the_projects_pins(capsys):
    assert worker_env.check(ROOT / "pyproject.toml", dry_run=True) == 0
    assert "nothing to install" in capsys.readouterr().out


def test_unmet_requirements_name_what_is_installed_instead():
    packaging = metadata.version("packaging")
    assert worker_env.unmet(["packaging", "tritonclient[all]==2.51.0", "numpy<2 ; python_version < '3'"]) == []
    assert worker_env.unmet(["packaging<1", "specops-no-such-package"]) == [
        ("packaging<1", f"{packaging} installed"), ("specops-no-such-package", "not installed")]


def test_only_the_differing_requirements_are_installed_with_the_workers_python(tmp_path, capsys):
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[project]\nname = "x"\nrequires-python = ">=3.11"\n'
                         'dependencies = ["packaging", "pyyaml", "specops-no-such-package==1.0"]\n')
    assert worker_env.check(pyproject, dry_run=True) == 0
    out = capsys.readouterr().out
    assert f"would run: {sys.executable} -m pip install --no-input specops-no-such-package==1.0\n" in out
    assert "pyyaml" not in out.split("would run:")[1]


def test_a_python_the_commit_does_not_support_is_refused(tmp_path, capsys):
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[project]\nname = "x"\nrequires-python = "<3.0"\ndependencies = []\n')
    assert worker_env.check(pyproject, dry_run=True) == 1
    assert "needs Python <3.0" in capsys.readouterr().err


def test_outside_a_prefect_step_the_running_python_is_the_workers():
    assert worker_env.worker_python() == sys.executable  # pytest's parent is no prefect process


# The install branch, for real: a throwaway venv that lacks one requirement, pip run by the script itself.
# Offline: the missing requirement is a wheel this test writes (a direct `name @ file://` reference, so pip
# consults no index, and a wheel needs no build, so no build isolation either); PIP_NO_INDEX makes any
# attempt to reach an index fail instead of downloading.
PROBE = "specops_worker_env_probe"
PROBE_DIST = PROBE.replace("_", "-")  # as pip names the installed distribution


def _wheel(dest: Path, name: str, version: str, module_source: str) -> Path:
    """A minimal pure-Python wheel (PEP 427): one module, METADATA, WHEEL, and a RECORD with hashes."""
    import base64
    import hashlib
    import zipfile

    info = f"{name}-{version}.dist-info"
    files = {
        f"{name}.py": module_source,
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: specops-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    files[f"{info}/RECORD"] = "\n".join([*record, f"{info}/RECORD,,"]) + "\n"
    wheel = dest / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for path, text in files.items():
            zf.writestr(path, text)
    return wheel


@pytest.fixture
def worker_venv(tmp_path) -> tuple[Path, dict]:
    """A venv made from this one's interpreter, seeing this venv's packages (pip, packaging, ...) through a
    .pth line, so only what a test's pyproject adds is missing; and the environment to run it in."""
    import sysconfig

    venv = tmp_path / "worker-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60)
    python = venv / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True, timeout=60).stdout.strip()
    Path(site, "specops-test-parent.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHONPATH", "PIP_"))}
    env.update(PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1", PYTHONNOUSERSITE="1")
    return python, env


def _clone_with(tmp: Path, dependencies: list[str]) -> Path:
    """What the pull step sees: a tree with tools/worker_env.py and a pyproject.toml pinning `dependencies`."""
    clone = tmp / "clone"
    (clone / "tools").mkdir(parents=True)
    shutil.copy2(ROOT / "tools" / "worker_env.py", clone / "tools" / "worker_env.py")
    deps = ", ".join(f'"{d}"' for d in dependencies)
    (clone / "pyproject.toml").write_text(f'[project]\nname = "x"\nrequires-python = ">=3.11"\ndependencies = [{deps}]\n')
    return clone


def _probe_requirement(tmp: Path) -> str:
    """The requirement the worker's venv lacks: the probe wheel, written here, pinned by its file URL."""
    wheel = _wheel(tmp, PROBE, "1.0", "VALUE = 42\n")
    return f"{PROBE_DIST} @ {wheel.as_uri()}"


def _step(python: Path, clone: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([str(python), "tools/worker_env.py"], cwd=clone, env=env, capture_output=True, text=True,
                          timeout=120)


def test_the_missing_requirement_is_installed_into_the_workers_venv_and_a_rerun_installs_nothing(
        tmp_path, worker_venv):
    python, env = worker_venv
    wanted = _probe_requirement(tmp_path)
    clone = _clone_with(tmp_path, ["packaging", wanted])

    first = _step(python, clone, env)
    assert first.returncode == 0, first.stdout + first.stderr
    assert f"worker_env: {wanted}: not installed\n" in first.stdout
    assert "packaging" not in first.stdout  # met: neither reported nor handed to pip
    assert f"running: {python} -m pip install --no-input {wanted}\n" in first.stdout
    installed = [line for line in first.stdout.splitlines() if line.startswith("Successfully installed")]
    assert installed == [f"Successfully installed {PROBE_DIST}-1.0"], first.stdout

    imported = subprocess.run([str(python), "-c", f"import {PROBE} as m; print(m.VALUE, m.__file__)"], env=env,
                              capture_output=True, text=True, timeout=60)
    value, where = imported.stdout.split()
    assert value == "42" and Path(where).is_relative_to(python.parents[1]), imported.stdout + imported.stderr
    with pytest.raises(metadata.PackageNotFoundError):  # this venv, seen through the .pth, was left alone
        metadata.version(PROBE)

    second = _step(python, clone, env)
    assert second.returncode == 0 and "meets the 2 requirements" in second.stdout, second.stdout + second.stderr
    assert "nothing to install" in second.stdout and "pip install" not in second.stdout


def test_a_failed_install_fails_the_step_with_pips_error(tmp_path, worker_venv):
    python, env = worker_venv
    gone = tmp_path / "nowhere" / "specops_worker_env_ghost-1.0-py3-none-any.whl"
    clone = _clone_with(tmp_path, ["packaging", f"specops-worker-env-ghost @ {gone.as_uri()}"])

    done = _step(python, clone, env)
    assert done.returncode != 0
    assert "ERROR:" in done.stderr and str(gone) in done.stderr, done.stderr


def test_a_commit_pinning_another_prefect_is_refused_and_nothing_is_installed(tmp_path, worker_venv):
    """pip would replace the Prefect the worker runs on, under the running worker: the operator upgrades it."""
    python, env = worker_venv
    running = metadata.version("prefect")  # the worker venv sees this venv's packages
    probe = _probe_requirement(tmp_path)
    clone = _clone_with(tmp_path, ["prefect==0.0.1", probe])

    done = _step(python, clone, env)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"pins prefect==0.0.1 ({running} installed): the worker runs on it" in done.stderr
    assert f"Upgrade the worker: {python} -m pip install 'prefect==0.0.1'" in done.stderr
    assert "running:" not in done.stdout and "Successfully installed" not in done.stdout  # not even the probe
    gone = subprocess.run([str(python), "-c", f"import {PROBE}"], env=env, capture_output=True, timeout=60)
    assert gone.returncode != 0


def test_a_run_waits_for_another_runs_install_and_then_installs_nothing(tmp_path, worker_venv):
    """Two flow runs starting at once on one host: the second waits on the venv's lock, checks again, and
    finds the requirement the first installed, so pip never runs twice on the shared venv."""
    import fcntl
    import threading

    python, env = worker_venv
    wanted = _probe_requirement(tmp_path)
    clone = _clone_with(tmp_path, ["packaging", wanted])
    lock = python.parents[1] / worker_env.LOCK_NAME  # <sys.prefix of the worker's python>/...

    holder = os.open(lock, os.O_RDWR | os.O_CREAT)
    fcntl.flock(holder, fcntl.LOCK_EX)  # the first run, installing
    os.write(holder, b"pid 1 (the first run)\n")
    step = subprocess.Popen([str(python), "tools/worker_env.py"], cwd=clone, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    watchdog = threading.Timer(120, step.kill)  # a bound on this test, not a timed assertion
    watchdog.start()
    try:
        seen = []
        while not any(line.startswith("worker_env: waiting for") for line in seen):
            line = step.stdout.readline()
            assert line, f"the step never waited for the lock: {''.join(seen)}{step.stderr.read()}"
            seen.append(line)
        assert seen[-1] == f"worker_env: waiting for {lock}: pid 1 (the first run) is changing {python.parents[1]}\n"
        assert step.poll() is None  # blocked on the held lock
        first = subprocess.run([str(python), "-m", "pip", "install", "--no-input", wanted], env=env,
                               capture_output=True, text=True, timeout=120)  # what the first run installs
        assert first.returncode == 0, first.stdout + first.stderr
    finally:
        os.close(holder)
        out, err = step.communicate(timeout=120)
        watchdog.cancel()
    assert step.returncode == 0, out + err
    assert "meets the 2 requirements" in out and "nothing to install" in out
    assert "pip install" not in "".join(seen) + out and "not installed" not in "".join(seen) + out
    assert lock.read_text().startswith(f"pid {step.pid} on ")  # it held the lock for its second check
