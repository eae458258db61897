"""`specops check PROFILE`: what `make demo` asks before it picks vLLM's CPU engine or the runtime."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]


def _check(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cli", "check", *args], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=120, env={**os.environ, **env})


def test_a_host_without_the_vllm_venv_is_told_why_in_one_line_with_exit_4(tmp_path):
    done = _check("ngram-vllm-serve-cpu", SPECOPS_VLLM_VENV=str(tmp_path / "none"))
    assert done.returncode == 4
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and f"no vLLM CPU venv at {tmp_path / 'none'}" in lines[0] and "make install" in lines[0]


def test_the_runtime_needs_no_vllm_venv(tmp_path):
    done = _check("ngram-local", SPECOPS_VLLM_VENV=str(tmp_path / "none"))
    assert done.returncode == 0, done.stderr
    assert "ngram-local: this host can run" in done.stdout
