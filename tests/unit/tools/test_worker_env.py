"""tools/worker_env.py: the worker's Python is checked against the clone's pins; only what differs is installed."""
from __future__ import annotations

import importlib.util
import sys
from importlib import metadata
from pathlib import Path

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
