"""The run directory: artifacts/<profile>/<run-id>/, where every step leaves its output and logs."""
from __future__ import annotations

import errno
import json
import logging
import os
import re
import secrets
import threading
import time
from collections.abc import Iterable
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from specops.atomic_file import RunFileError, write_text
from specops.run.spans import wall_shares
from specops.settings import artifacts_root

log = logging.getLogger(__name__)


_TIMINGS_LOCK = threading.Lock()
STATUS_FILE = "status.json"
RUNNING = "running"  # then a specops.results.model.Status value: ok, invalid, failed, interrupted
INTERRUPTED = "interrupted"  # said the moment an interrupt leaves a step, before teardown and the report


def read_status(run_path: Path) -> dict[str, Any]:
    """A run directory's status.json ({} when the run predates it or never started)."""
    try:
        return json.loads((Path(run_path) / STATUS_FILE).read_text())
    except (OSError, json.JSONDecodeError):
        return {}


def mark_abandoned(run_path: Path, why: str) -> bool:
    """A run whose process died says `running` forever: say failed, at the step it was in. A sweep's server
    or cell directory stands for the whole sweep: it, and every part of it still running, end failed."""
    run_path = Path(run_path)
    top = run_path
    for parent in run_path.parents:  # the outermost directory that is a run: the sweep around a cell
        if not (parent / STATUS_FILE).is_file():
            break
        top = parent
    return end_open_statuses(top, "failed", why) > 0


def end_open_statuses(root: Path, state: str, error: str | None = None) -> int:
    """Every status.json in root or below it that still says `running` says `state` (with `error`),
    keeping the step it was in; how many. What a sweep opened ends with the sweep."""
    ended = 0
    for path in sorted(Path(root).rglob(STATUS_FILE)):
        status = read_status(path.parent)
        if status.get("state") != RUNNING:
            continue
        status.update(state=state, updated_at=time.time(), **({"error": error} if error else {}))
        try:
            _write_status(path.parent, status)
        except RunFileError as exc:  # a full disk: the caller's own error is what must reach the user
            log.error("could not end %s: %s", path, exc)
            continue
        ended += 1
    return ended


def _write_status(run_path: Path, data: dict[str, Any]) -> None:
    """Replaced atomically, so a reader never sees half a file."""
    text = json.dumps(data, indent=2, sort_keys=True) + "\n"
    try:
        write_text(run_path / STATUS_FILE, text)
    except RunFileError as exc:
        data, path = text.encode("utf-8"), run_path / STATUS_FILE
        # Only into blocks the file already owns: a write that needs a new one fails half-way, and a half
        # status.json is worse than the old whole one (a long error, e.g. a server's log tail, does not fit).
        if exc.errno != errno.ENOSPC or not path.is_file() or len(data) > path.stat().st_blocks * 512:
            raise
        # A full disk has no room for a second copy, but the file's own block holds the new few hundred bytes:
        # a run that fails for want of space must still say so.
        with open(path, "r+b") as status:
            status.write(data)
            status.truncate()


class _NoAliases(yaml.SafeDumper):
    """A value met twice is written out twice: specops reads no alias (specops/profile/loader.py StrictLoader), its
    own profile.yaml included (specops/pipeline/abandoned.py)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)


class RunDirError(ValueError):
    """A run id that cannot name a new run directory (malformed, or a run already has it)."""


_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def validate_run_id(run_id: str, profile_name: str | None = None, field: str = "--run-id") -> str:
    """A run id is one path component under artifacts_root()/<profile>/: no separators, no '..'. `field`: what the
    caller calls it (the CLI's --run-id, a flow's run_id parameter)."""
    if not _RUN_ID.fullmatch(run_id) or ".." in run_id:
        raise RunDirError(f"{field} {run_id!r}: use 1-128 letters, digits, '.', '_' or '-' (no '..'), starting with a "
                          "letter or digit (it names a directory under the artifacts root)")
    root = artifacts_root()
    # Lexically: a symlinked profile directory is the user's choice, not an escape.
    if not Path(os.path.normpath(root / (profile_name or "_") / run_id)).is_relative_to(root):
        raise RunDirError(f"{field} {run_id!r} would leave the artifacts root {root}")
    return run_id


def check_free_run_id(run_id: str | None, *parents: str, field: str = "--run-id") -> None:
    """A run id given for a directory artifacts/<parents...>/<run id> that is well formed and names no existing
    directory (whose files would be overwritten): RunDirError otherwise. Checked before a flow's first run (a
    calibration's directory is made after all its runs), by the CLI before Prefect starts."""
    if not run_id:
        return
    validate_run_id(run_id, "/".join(parents) or None, field)
    existing = artifacts_root().joinpath(*parents, run_id)
    if existing.exists():
        empty = "omit it" if field.startswith("--") else "leave it empty"
        raise RunDirError(f"{field} {run_id!r}: a directory already exists at {existing}; choose another {field}, or "
                          f"{empty} for a new timestamped one")


@dataclass
class RunProgress:
    """The run's timings and where it is, held in memory (timings.json mirrors it for a dead run)."""

    started_at: float = field(default_factory=time.time)
    phases: dict[str, dict[str, float]] = field(default_factory=dict)
    failed_at: tuple[str, str] | None = None  # the innermost step an exception left
    spans: dict[str, list[tuple[float, float]]] = field(default_factory=dict)  # phase -> (start, end), monotonic
    started_mono: float = field(default_factory=time.monotonic)  # started_at on the spans' clock

    def busy_s(self, phases: Iterable[str]) -> float:
        """The wall time inside any block of `phases`, overlapping blocks counted once."""
        spans = sorted(span for phase in phases for span in self.spans.get(phase, []))
        total, reach = 0.0, float("-inf")
        for start, end in spans:
            total += max(0.0, end - max(start, reach))
            reach = max(reach, end)
        return total

    def shares_s(self, until: float) -> dict[str, float]:
        """Each step's share of the wall from the start to `until` (monotonic), every moment counted once."""
        return wall_shares(self.spans, self.started_mono, until)

    def to_dict(self) -> dict[str, Any]:
        return {"started_at": self.started_at, "phases": self.phases,
                "failed_at": list(self.failed_at) if self.failed_at else None}


@dataclass(frozen=True)
class RunDir:
    path: Path
    progress: RunProgress = field(default_factory=RunProgress, compare=False, repr=False)

    @classmethod
    def create(cls, profile_name: str, run_id: str | None = None) -> RunDir:
        """A new, empty run directory; never an existing one (a finished run's files stay as they are)."""
        path = artifacts_root() / profile_name / validate_run_id(run_id or new_run_id(), profile_name)
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            path.mkdir()  # atomic: of two runs given one id, only one gets the directory
        except FileExistsError:
            raise RunDirError(f"run directory {path} already exists: choose another --run-id, or omit it for "
                              "a new timestamped one") from None
        return cls(path)

    @property
    def run_id(self) -> str:
        return self.path.name

    def child(self, name: str) -> RunDir:
        """A new run directory inside this one, with its own timings (a sweep's server or cell)."""
        path = self.path / name
        path.mkdir()
        return RunDir(path)

    def sub(self, *parts: str) -> Path:
        target = self.path.joinpath(*parts)
        target.mkdir(parents=True, exist_ok=True)
        return target

    def logs(self) -> Path:
        return self.sub("logs")

    def servers(self) -> Path:
        """Records of started servers, read by the janitor if a run dies before its teardown."""
        return self.sub("servers")

    def write_json(self, name: str, data: Any) -> Path:
        return write_text(self.path / name, json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")

    def write_yaml(self, name: str, data: Any) -> Path:
        return write_text(self.path / name, yaml.dump(data, Dumper=_NoAliases, sort_keys=False))

    def mark_started(self) -> None:
        self.write_json("timings.json", self.progress.to_dict())
        self.set_status(RUNNING)

    def set_status(self, state: str, step: str | None = None, variant: str | None = None,
                   error: str | None = None) -> None:
        """status.json: running (with the step it is in), then ok / invalid / failed (with the step
        and the error)."""
        data = {"state": state, "step": step, "variant": variant, "error": error, "pid": os.getpid(),
                "started_at": self.progress.started_at, "updated_at": time.time()}
        with _TIMINGS_LOCK:
            _write_status(self.path, data)

    def say_failed(self, step: str | None, variant: str | None, error: str) -> None:
        """set_status("failed", ...) where an error is already on its way: a disk that refuses status.json
        as well (full, read-only) is logged, and the error that ended the run is the one raised."""
        try:
            self.set_status("failed", step, variant, error)
        except OSError as exc:
            log.error("status.json could not say the run failed at %s: %s", step, exc)

    def fail_at(self, phase: str, variant: str, error: BaseException) -> None:
        """The run failed at this step: its progress and status.json name it and the error. An interrupt (not an
        Exception: Ctrl-C, SIGTERM, a cancellation) says `interrupted` at once, so a run killed later in its
        teardown or report (a worker's grace ran out) is still one nobody judges (specops/pipeline/abandoned.py)."""
        self.progress.failed_at = (phase, variant)
        message = f"{type(error).__name__}: {error}"
        if isinstance(error, Exception):
            self.say_failed(phase, variant, message)
            return
        try:
            self.set_status(INTERRUPTED, phase, variant, message)
        except OSError as exc:
            log.error("status.json could not say the run was interrupted at %s: %s", phase, exc)

    def status(self) -> dict[str, Any]:
        return read_status(self.path)

    @contextmanager
    def timed(self, phase: str, variant: str, announce: bool = True):
        """Add the block's wall time to phases[phase][variant]; an exception leaving the block
        marks it as where the run failed (the innermost block wins) and says so in status.json at
        once; a later success of the same block (a retry) takes that back. `announce`: the block
        is the step status.json names while it runs (teardown is not)."""
        start = time.monotonic()
        if announce and self.progress.failed_at is None:
            self.set_status(RUNNING, phase, variant)
        try:
            yield
        except BaseException as error:
            if self.progress.failed_at is None:
                self.fail_at(phase, variant, error)  # said at once: teardown and the report may take a while
            raise
        else:
            if announce and self.progress.failed_at == (phase, variant):  # a retry of the failed step worked
                self.progress.failed_at = None
                self.set_status(RUNNING, phase, variant)
        finally:
            end = time.monotonic()
            self.progress.spans.setdefault(phase, []).append((start, end))
            self.add_timing(phase, variant, end - start)

    def add_timing(self, phase: str, variant: str, seconds: float) -> None:
        with _TIMINGS_LOCK:
            bucket = self.progress.phases.setdefault(phase, {})
            bucket[variant] = bucket.get(variant, 0.0) + seconds
            try:
                self.write_json("timings.json", self.progress.to_dict())
            except RunFileError as exc:  # a mirror for a dead run: the run itself goes on to say what failed
                log.warning("%s", exc)
