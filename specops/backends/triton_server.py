"""tritonserver from the nvidia-pytriton wheel, run as a process group we own."""
from __future__ import annotations

import logging
import os
import re
import secrets
import signal
import subprocess
import sys
import sysconfig
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import psutil

from specops.host import processes as proc
from specops.host.liveness import process_state
from specops.triton import client, server_log
from specops.triton.backend_dir import TritonDist, assemble_backend_dir, backend_dir_for, triton_dist
from specops.triton.client import Endpoint

log = logging.getLogger(__name__)

# tritonserver's Python-backend shared memory regions, named `specops<owner pid>_<token>_`: a stopped server's go
# with it, a dead owner's (a SIGKILLed run's) with the next server start or `specops janitor`.
_SHM_DIR = Path("/dev/shm")

# Sent to tritonserver when our process dies. SIGKILL: with SIGTERM the server waits for
# in-flight decoupled requests (a live genai-perf keeps it up for a whole generation) and then
# can stay stuck after "Exiting immediately". Its stubs follow within ~0.5 s (our model file
# exits when orphaned); the 1 MiB shm regions it leaves are swept by the next start.
_DEATH_SIGNAL = signal.SIGKILL


class TritonStartError(RuntimeError):
    """tritonserver exited or never became ready; the message carries the log tail."""


class TritonStopError(RuntimeError):
    """Processes or ports outlived stop()."""


class TritonServer:
    """Start tritonserver on free loopback ports; `with TritonServer(...) as s: s.wait_ready(60)`.

    The server runs in its own session (process group) with a death signal tied to this
    process, the running interpreter's directory first on PATH (the Python-backend stub takes
    its environment from the `python3` it finds there), and its output in `log_file`.
    """

    def __init__(self, model_repository: Path, log_file: Path, *, backend_dir: Path | None = None,
                 host: str = "127.0.0.1", models: Sequence[str] | None = None, exit_timeout_s: int = 5,
                 port_attempts: int = 3, extra_args: Sequence[str] = (), python_bin: Path | None = None,
                 base_env: Mapping[str, str] | None = None, backend_dir_ready: bool = False):
        self.model_repository = Path(model_repository).resolve()
        self.log_file = Path(log_file).resolve()
        self.backend_dir = Path(backend_dir).absolute() if backend_dir else self.log_file.parent / "triton-backends"
        self.host = host
        self.models = list(models) if models is not None else _repository_models(self.model_repository)
        self.exit_timeout_s = exit_timeout_s
        self.port_attempts = port_attempts
        self.extra_args = list(extra_args)
        # The stub's interpreter comes from the `python3` first on PATH: this one's unless told otherwise
        # (Triton's vllm_backend runs in the vLLM venv); base_env replaces our environment as the start.
        self.python_bin = Path(python_bin) if python_bin else Path(os.path.dirname(sys.executable))
        self.base_env = dict(base_env) if base_env is not None else None
        self.backend_dir_ready = backend_dir_ready  # assembled by the caller (vllm_backend_dir): used as it is
        self._backend_root = self.backend_dir  # otherwise the root: start() assembles this venv's directory in it
        self._dist: TritonDist | None = None
        self._proc: subprocess.Popen | None = None
        self._ports: tuple[int, int, int] | None = None
        self._attempt = 0
        self._log_offset = 0
        self._started_at = 0.0
        self._shm_prefix = f"specops{os.getpid()}_{secrets.token_hex(3)}_"
        self._stubs: list[psutil.Process] = []  # the Python-backend stubs of the ready server

    # --- lifecycle --------------------------------------------------------------------------
    def __enter__(self) -> TritonServer:
        return self.start()

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            self.stop()
        except TritonStopError:
            if exc is None:
                raise
            log.exception("tritonserver teardown failed while handling %s", exc_type.__name__)

    def start(self) -> TritonServer:
        """Assemble the backend directory and launch the process (readiness: `wait_ready`)."""
        if self._proc is not None:
            raise RuntimeError("tritonserver already started")
        self._dist = triton_dist()
        if not self.backend_dir_ready:
            self.backend_dir = assemble_backend_dir(self._backend_root, self._dist)
        sweep_stale_shm_regions()
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        self._launch()
        return self

    def wait_ready(self, deadline_s: float) -> Endpoint:
        """Block until server and models are ready; relaunch on a port clash; raise with the log tail."""
        if self._proc is None:
            raise RuntimeError("tritonserver not started")
        deadline = time.monotonic() + deadline_s
        while True:
            rc = self._proc.poll()
            if rc is not None:
                clash = server_log.port_clash(self._launch_log())
                if clash and self._attempt < self.port_attempts:
                    log.warning("tritonserver ports %s clashed; relaunching on new ports", self._ports)
                    self._launch()
                    continue
                why = f"could not bind its ports in {self._attempt} attempts" if clash else "exited"
                raise TritonStartError(
                    f"tritonserver {why} (exit code {rc}) before it was ready; "
                    f"log {self.log_file} ends with:\n{self.log_tail()}"
                )
            # specops reads its acceptance counters from the metrics port: ready means that too.
            if client.is_ready(self.endpoint, self.models) and client.metrics_answer(self.endpoint):
                self._stubs = [p for p in proc.descendants(self._proc.pid) if _is_stub(p)]
                log.info("tritonserver ready in %.1fs: %s", time.monotonic() - self._started_at, self.endpoint)
                return self.endpoint
            if time.monotonic() >= deadline:
                raise TritonStartError(
                    f"tritonserver not ready within {deadline_s:.0f}s (models {self.models}); "
                    f"log {self.log_file} ends with:\n{self.log_tail()}"
                )
            time.sleep(0.2)

    def stop(self, timeout_s: float | None = None) -> None:
        """SIGTERM the group, SIGKILL after `timeout_s`, reap stubs, check the ports are free.

        The default bound is the server's exit timeout plus 1 s: past its exit timeout
        tritonserver logs "Exiting immediately" but stays stuck while a decoupled request is
        in flight (the model cannot unload before it completes), so waiting longer buys nothing.
        """
        if self._proc is None:
            return
        popen, self._proc = self._proc, None
        t0 = time.monotonic()
        timeout_s = self.exit_timeout_s + 1.0 if timeout_s is None else timeout_s
        survivors = proc.kill_process_tree(popen, timeout_s)
        remove_regions(self._shm_prefix)
        busy = proc.wait_ports_free(self.host, list(self._ports or ()), timeout_s=5.0)
        took = time.monotonic() - t0
        note = server_log.stop_note(popen.returncode, self._launch_log(), self.exit_timeout_s)
        if note is None:
            log.warning("tritonserver pid %d exited %s when stopped, not as a stop ends (log %s):\n%s", popen.pid,
                        popen.returncode, self.log_file, self.log_tail(10))
        else:
            log.info("tritonserver pid %d stopped in %.1fs%s", popen.pid, took, note)
        if survivors or busy:
            raise TritonStopError(
                f"after stopping tritonserver pid {popen.pid}: processes alive "
                f"{[p.pid for p in survivors]}, ports still bound {busy}"
            )

    # --- state ------------------------------------------------------------------------------
    def state(self) -> str | None:
        """Why the server cannot serve (exited, killed, stopped, lost a stub); None while it can."""
        down = process_state(self._proc)
        if down is not None:
            return down
        for stub in self._stubs:
            if not proc.running(stub):
                # The model instance it served fails every request from now on (Triton does not
                # restart it for requests already queued).
                return f"lost its Python-backend stub pid {stub.pid} (a model instance process died)"
        return None

    @property
    def endpoint(self) -> Endpoint:
        if self._ports is None:
            raise RuntimeError("tritonserver not started")
        http, grpc, metrics = self._ports
        return Endpoint(self.host, http, grpc, metrics, self.pid)

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @classmethod
    def describe_command(cls, model_repository: Path, *, host: str = "127.0.0.1", exit_timeout_s: int = 5,
                         backend_dir: Path | None = None, extra_args: Sequence[str] = ()) -> list[str]:
        """The command line `start()` would run, ports and shm prefix as placeholders (for plans)."""
        server = cls(model_repository, Path("triton.log"), host=host, models=[],
                     exit_timeout_s=exit_timeout_s, extra_args=extra_args)
        server._dist, server._shm_prefix = triton_dist(), "<unique-prefix>"
        server.model_repository = Path(model_repository)  # shown as given, not resolved
        server.backend_dir = backend_dir_for(backend_dir, server._dist) if backend_dir else Path("<triton-backends>")
        return server._command(("<http-port>", "<grpc-port>", "<metrics-port>"))

    def command(self) -> list[str]:
        """The tritonserver command line for the current ports."""
        assert self._ports is not None
        return self._command(tuple(map(str, self._ports)))

    def _command(self, ports: tuple[str, ...]) -> list[str]:
        assert self._dist is not None
        http, grpc, metrics = ports
        return [
            str(self._dist.binary),
            "--model-repository", str(self.model_repository),
            "--backend-directory", str(self.backend_dir),
            "--model-control-mode", "none",
            "--exit-timeout-secs", str(self.exit_timeout_s),
            "--log-verbose", "0",
            "--http-address", self.host, "--http-port", http,
            "--grpc-address", self.host, "--grpc-port", grpc,
            "--metrics-address", self.host, "--metrics-port", metrics,
            "--allow-gpu-metrics", "false",
            "--pinned-memory-pool-byte-size", "0",  # CPU only: skip the CUDA pinned pool probe
            "--backend-config", f"python,shm-region-prefix-name={self._shm_prefix}",
            *self.extra_args,
        ]  # fmt: skip

    def environment(self) -> dict[str, str]:
        """Our environment (or base_env) with the stub's interpreter directory first on PATH."""
        env = proc.scrubbed_env(os.environ if self.base_env is None else self.base_env)  # never download credentials
        # not resolved: the venv's bin, not the base python's
        env["PATH"] = os.pathsep.join([str(self.python_bin), env.get("PATH", "/usr/bin:/bin")])
        # The stub's embedded interpreter starts in the C locale, so open() without an
        # encoding reads ASCII; torch's inductor templates (imported by ModelOpt) are UTF-8.
        env["PYTHONUTF8"] = "1"
        # The binary, libtriton_python.so and the stub find the wheel's nvidia_pytriton.libs
        # through their $ORIGIN rpath (also through our symlinks). The stub links a bare
        # libpython3.X.so.1.0: without help it takes the system one (Debian 3.11.2 here) while
        # importing the venv's stdlib (pyenv 3.11.7), and extension modules then fail
        # ("_ssl...: undefined symbol: _PyModule_Add"). Point it at the running interpreter's.
        # Copied backend libraries (vllm_backend_dir) have no $ORIGIN to find the wheel's libraries by.
        libs = [python_libdir(), str(self._dist.libs) if self._dist is not None else None]
        env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [*libs, env.get("LD_LIBRARY_PATH")]))
        return env

    def log_tail(self, lines: int = 25) -> str:
        """The current launch's log, ASCII tables and CUDA noise dropped, error lines kept."""
        return server_log.tail(self._launch_log(), lines)

    # --- internals --------------------------------------------------------------------------
    def _launch(self) -> None:
        avoid = set(self._ports or ())
        self._ports = tuple(proc.pick_free_ports(self.host, 3, avoid=avoid))  # type: ignore[assignment]
        self._attempt += 1
        cmd = self.command()
        with open(self.log_file, "ab") as fh:
            self._log_offset = fh.tell()
            fh.write(f"# specops launch {self._attempt}: {' '.join(cmd)}\n".encode())
        self._started_at = time.monotonic()
        self._proc = proc.spawn(cmd, self.environment(), self.log_file, death_signal=_DEATH_SIGNAL)
        log.info("tritonserver pid %d starting (attempt %d): %s", self._proc.pid, self._attempt, " ".join(cmd))

    def _launch_log(self) -> str | None:
        return server_log.launch_text(self.log_file, self._log_offset)


def python_libdir() -> str | None:
    """Directory of the running interpreter's shared libpython, None for a static build."""
    libdir, soname = sysconfig.get_config_var("LIBDIR"), sysconfig.get_config_var("INSTSONAME")
    if not sysconfig.get_config_var("Py_ENABLE_SHARED") or not libdir or not soname:
        return None
    return libdir if (Path(libdir) / soname).exists() else None


def _is_stub(p: psutil.Process) -> bool:
    try:
        return p.name().startswith("triton_python_b")  # comm is cut to 15 characters
    except psutil.Error:
        return False


def _repository_models(repository: Path) -> list[str]:
    return sorted(p.parent.name for p in repository.glob("*/config.pbtxt"))


def remove_regions(prefix: str) -> None:
    """Drop Python-backend shm regions a killed server left behind (its unique prefix only)."""
    for region in _SHM_DIR.glob(f"{prefix}*"):
        log.info("removing leftover shared memory region %s", region)
        region.unlink(missing_ok=True)


def sweep_stale_shm_regions() -> list[Path]:
    """Remove shm regions of servers whose owning specops process is dead (SIGKILLed runs); those removed."""
    removed = []
    for region in _SHM_DIR.glob("specops*_*"):
        match = re.match(r"specops(\d+)_", region.name)
        if match and not psutil.pid_exists(int(match[1])):
            log.info("removing stale shared memory region %s (owner pid %s is gone)", region, match[1])
            region.unlink(missing_ok=True)
            removed.append(region)
    return removed
