"""Where genai-perf and perf_analyzer live, the environment they run in, and what is missing.

genai-perf (PyPI) drives perf_analyzer (from the tritonclient 2.51.0 wheel, in the venv's
bin). perf_analyzer links libb64.so.0d (Debian `libb64-0d`) and libcudart.so.12 (PyPI
`nvidia-cuda-runtime-cu12`) even on CPU; the latter is put on LD_LIBRARY_PATH for the
benchmark subprocess only.
"""
from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sysconfig
from collections.abc import Mapping
from pathlib import Path

from specops.host.processes import scrubbed_env

OFFLINE_VARS = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}

# A missing shared library of perf_analyzer -> how to get it.
LIBRARY_FIXES = {
    "libb64.so.0d": "install Debian's libb64-0d: `apt-get install -y libb64-0d`",
    "libcudart.so.12": "install PyPI nvidia-cuda-runtime-cu12 (`pip install nvidia-cuda-runtime-cu12`)",
}
_NOT_FOUND = re.compile(r"^\s*(\S+)\s+=>\s+not found", re.MULTILINE)
_LOAD_ERROR = re.compile(r"error while loading shared libraries: ([^:]+):")


def scripts_dir() -> Path:
    """The running environment's bin directory (genai-perf, perf_analyzer, python3)."""
    return Path(sysconfig.get_path("scripts"))


def genai_perf_executable() -> str:
    """Absolute path of genai-perf in this environment, else the bare name (PATH lookup)."""
    candidate = scripts_dir() / "genai-perf"
    return str(candidate) if candidate.exists() else "genai-perf"


def cudart_lib_dir() -> Path | None:
    """The lib dir of the installed nvidia-cuda-runtime-cu12 package, if present."""
    try:
        spec = importlib.util.find_spec("nvidia.cuda_runtime")
    except ModuleNotFoundError:
        return None
    for location in (spec.submodule_search_locations or []) if spec else []:
        lib = Path(location) / "lib"
        if any(lib.glob("libcudart.so.12*")):
            return lib
    return None


def tool_env(base_env: Mapping[str, str] | None = None) -> dict[str, str]:
    """Environment for genai-perf/perf_analyzer: venv bin first, cudart, offline, no secrets."""
    env = scrubbed_env(os.environ if base_env is None else base_env)
    env["PATH"] = _prepend(str(scripts_dir()), env.get("PATH", os.defpath))
    cudart = cudart_lib_dir()
    if cudart is not None:
        env["LD_LIBRARY_PATH"] = _prepend(str(cudart), env.get("LD_LIBRARY_PATH", ""))
    env.update(OFFLINE_VARS)
    return env


def preflight(base_env: Mapping[str, str] | None = None) -> list[str]:
    """Problems that would stop a genai-perf run here, each with its fix; [] if none."""
    env = tool_env(base_env)
    problems = []
    if shutil.which(genai_perf_executable(), path=env["PATH"]) is None:
        problems.append("genai-perf not found: `pip install genai-perf==0.0.16`")
    perf_analyzer = shutil.which("perf_analyzer", path=env["PATH"])
    if perf_analyzer is None:
        problems.append(
            "perf_analyzer not found on PATH: `pip install 'tritonclient[all]==2.51.0'` "
            "(its wheel ships bin/perf_analyzer; 2.60's needs glibc 2.38)"
        )
        missing = [] if cudart_lib_dir() else ["libcudart.so.12"]
    else:
        missing = _missing_libraries(perf_analyzer, env)
    for lib in missing:
        fix = LIBRARY_FIXES.get(lib, "install the package that provides it")
        problems.append(f"{lib} not found (needed by perf_analyzer): {fix}")
    if perf_analyzer is not None and not missing:
        code, out = _capture([perf_analyzer, "--version"], env)
        if code != 0:
            problems.append(f"`perf_analyzer --version` failed (exit {code}): {out.strip()[-500:]}")
    return problems


def _missing_libraries(binary: str, env: Mapping[str, str]) -> list[str]:
    """Shared libraries the binary cannot load: ldd if present, else a trial run."""
    if shutil.which("ldd"):
        return _NOT_FOUND.findall(_capture(["ldd", binary], env)[1])
    return _LOAD_ERROR.findall(_capture([binary, "--version"], env)[1])


def _capture(cmd: list[str], env: Mapping[str, str]) -> tuple[int, str]:
    try:
        done = subprocess.run(cmd, env=dict(env), capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return -1, str(exc)
    return done.returncode, done.stdout + done.stderr


def _prepend(entry: str, path_list: str) -> str:
    parts = [p for p in path_list.split(os.pathsep) if p and p != entry]
    return os.pathsep.join([entry, *parts])
