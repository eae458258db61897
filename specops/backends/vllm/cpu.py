"""The vLLM CPU engine: where its venv is, whether it is the pinned build, and the environment it runs in.

vLLM's CPU build pins packages that clash with specops' own (transformers, numpy), so `make install`
gives it a venv of its own (like AIPerf's); specops never imports vLLM, it starts it as a process:
its OpenAI server, or tritonserver whose Python-backend stub runs Triton's vllm_backend in that venv.
The facts (version, what to preload, what to remove, the bridges) are data: versions/data/vllm_cpu.yaml.
"""
from __future__ import annotations

import functools
import json
import os
import subprocess
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from specops.host.processes import scrubbed_env
from specops.settings import env_name, installed_venv, settings
from specops.versions.store import load

VENV_VAR = env_name("specops_vllm_venv")
CHECKOUT = Path(__file__).resolve().parents[3]
BRIDGE_MODULE = "specops_vllm_bridge"  # the standalone file in specops/triton/bridge/
BRIDGE_VAR = "SPECOPS_VLLM_BRIDGE"  # the bridge is active only where this names its table
_BRIDGE_SOURCE = Path(__file__).resolve().parents[2] / "triton" / "bridge" / f"{BRIDGE_MODULE}.py"
# The interpreter's own settings would leak into the vLLM venv.
_FOREIGN_VARS = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")


@functools.cache
def facts() -> dict:
    return load("vllm_cpu")


def version() -> str:
    """The vLLM version specops pins for CPU serving."""
    return str(facts()["version"])


def install_hint() -> str:
    f = facts()
    return (f"`make install` builds {f['venv']} with {f['distribution']}=={f['version']} (its pins clash with "
            f"specops' environment), or point {VENV_VAR} at a venv holding it")


@dataclass(frozen=True)
class VllmVenv:
    root: Path

    @property
    def python(self) -> Path:
        return self.root / "bin" / "python"

    @property
    def bin(self) -> Path:
        return self.root / "bin"

    def site_packages(self) -> Path:
        found = sorted((self.root / "lib").glob("python3.*/site-packages"))
        if not found:
            raise FileNotFoundError(f"no site-packages under {self.root / 'lib'}")
        return found[0]

    def preload(self) -> list[str]:
        return [row["path"].format(venv=self.root) for row in facts()["preload"]]

    def server_argv(self) -> list[str]:
        """vLLM's OpenAI server in this venv (the `vllm` command fails on this build: data/vllm_cpu.yaml)."""
        return [str(self.python), "-m", facts()["server_module"]]

    def environment(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """A vLLM process's environment: no secrets, this venv's bin first on PATH (Triton's stub takes
        its interpreter from there), the preloaded libraries, the engine's CPU settings (the profile's
        own env may override them later)."""
        env = {k: v for k, v in scrubbed_env(os.environ if base is None else base).items()
               if k not in _FOREIGN_VARS}
        env["PATH"] = os.pathsep.join([str(self.bin), env.get("PATH", os.defpath)])
        env["LD_PRELOAD"] = " ".join(filter(None, [*self.preload(), env.get("LD_PRELOAD")]))
        for name, value in facts()["environment"].items():
            env.setdefault(name, str(value))
        return env

    def install_bridge(self) -> None:
        """Put the bridge module and its .pth line into this venv (idempotent): the environment specops
        built is where the bridge belongs, since Triton's stub starts an isolated interpreter that
        ignores PYTHONPATH (specops/triton/bridge/specops_vllm_bridge.py)."""
        site = self.site_packages()
        _write_if_changed(site / f"{BRIDGE_MODULE}.py", _BRIDGE_SOURCE.read_text(encoding="utf-8"))
        _write_if_changed(site / f"{BRIDGE_MODULE}.pth", f"import {BRIDGE_MODULE}; {BRIDGE_MODULE}.install()\n")


BIND_VAR = "VLLM_CPU_OMP_THREADS_BIND"


def core_share(slot: int, servers: int, cores: list[int]) -> str | None:
    """The cores of server `slot` of `servers` up at once, as VLLM_CPU_OMP_THREADS_BIND takes them ("0", "2,3";
    vllm/envs.py; vllm/v1/worker/cpu_worker.py binds the worker's OpenMP threads there), keeping the last core
    for what every server shares: the API servers and the benchmark tool (AIPerf's services took ~0.9 of a core
    here). vLLM's default ('auto') binds every server on a host to the same cores, all but one, so two servers
    side by side decode on one set and the one answering shares it with the other's idle spin (a worker
    busy-loops on its shared-memory queue for a second after each step: vllm/distributed/device_communicators/
    shm_broadcast.py SpinCondition). None where there are too few cores to give each server one of its own and
    keep one spare: then vLLM's default stands, the same for every server, so neither variant gets a core the
    other lacks (on 2 cores one server's core would also be AIPerf's)."""
    share = (len(cores) - 1) // servers
    if servers < 2 or share < 1:
        return None
    mine = sorted(cores)[slot * share:(slot + 1) * share]
    return str(mine[0]) if len(mine) == 1 else ",".join(map(str, mine))


def bridge_table() -> str:
    """The bridges as the module reads them (JSON)."""
    rows = [{k: row[k] for k in ("module", "name", "source")} for row in facts()["triton_backend_bridges"]]
    return json.dumps(rows, indent=1) + "\n"


def _write_if_changed(path: Path, text: str) -> None:
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")  # servers start side by side
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def venv() -> VllmVenv:
    """$SPECOPS_VLLM_VENV, else the venv named in the facts that `make install` built (settings.installed_venv)."""
    return VllmVenv(settings().specops_vllm_venv or installed_venv(facts()["venv"], CHECKOUT))


def pinned() -> dict[str, str]:
    """Distribution -> the version the venv must hold: vLLM's CPU build and what is built into it from source."""
    built = dict(row["sdist"].split("==") for row in facts().get("build_from_source") or ())
    return {facts()["distribution"]: version()} | built


_VERSIONS = """import importlib.metadata as m, json, sys
def v(name):
    try:
        return m.version(name)
    except m.PackageNotFoundError:
        return None
print(json.dumps({name: v(name) for name in sys.argv[1:]}))"""


@functools.lru_cache(maxsize=4)
def _installed_versions(python: Path) -> dict[str, str | None]:
    """One interpreter start for every pinned distribution: what the venv holds (None: absent or unreadable)."""
    try:
        done = subprocess.run([str(python), "-c", _VERSIONS, *pinned()], capture_output=True, text=True,
                              timeout=60, env={"PATH": os.defpath})
        return json.loads(done.stdout) if done.returncode == 0 else {}
    except (OSError, subprocess.TimeoutExpired, ValueError):
        return {}


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> set[str] | None:
    """The first CPU's feature flags (None: not Linux on x86, or unreadable)."""
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    line = next((line for line in text.splitlines() if line.startswith("flags")), None)
    return set(line.split(":", 1)[1].split()) if line else None


def isa_problem(flags: set[str] | None) -> str | None:
    """The build's kernels need one of the instruction sets in the facts (data/vllm_cpu.yaml `isa`)."""
    isa = facts()["isa"]
    if flags is None or any(flag in flags for flag in isa["any_of"]):
        return None
    return (f"this CPU has none of {', '.join(isa['any_of'])}, which {facts()['distribution']} {version()}'s "
            f"kernels need ({isa['source']})")


def preflight() -> list[str]:
    """What this machine lacks to run the vLLM CPU engine, each with its fix."""
    if (problem := isa_problem(cpu_flags())) is not None:
        return [problem]
    v = venv()
    if not v.python.is_file():
        return [f"no vLLM CPU venv at {v.root}: {install_hint()}"]
    # Every pin, whatever the profile's method: one interpreter start reads them all, and `make install` builds
    # them all, so a venv that lacks one is not the one specops pins (arctic-inference serves only suffix decoding).
    found = _installed_versions(v.python)
    problems = [f"{v.root} holds {name} {found.get(name) or '(none)'}; specops renders for and checks against "
                f"{want}: {install_hint()}" for name, want in pinned().items() if found.get(name) != want]
    if problems:
        return problems
    for row, path in zip(facts()["preload"], v.preload()):
        if not Path(path).is_file():
            problems.append(f"{path} is missing (from {row['from']}): vLLM's CPU backend preloads it; `make install`")
    return problems
