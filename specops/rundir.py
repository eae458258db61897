"""The run directory: artifacts/<profile>/<run-id>/, where every step leaves its output and logs."""
from __future__ import annotations

import json
import os
import secrets
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml


def artifacts_root() -> Path:
    return Path(os.environ.get("SPECOPS_ARTIFACTS", "artifacts")).resolve()


def cache_root() -> Path:
    """Cross-run cache for models and rendered repositories ($SPECOPS_CACHE or ~/.cache/specops)."""
    if env := os.environ.get("SPECOPS_CACHE"):
        return Path(env).resolve()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "specops"


_TIMINGS_LOCK = threading.Lock()


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)


@dataclass
class RunProgress:
    """The run's timings and where it is, held in memory (timings.json mirrors it for a dead run)."""

    started_at: float = field(default_factory=time.time)
    phases: dict[str, dict[str, float]] = field(default_factory=dict)
    active: list[tuple[str, str]] = field(default_factory=list)  # (step, variant), innermost last
    failed_at: tuple[str, str] | None = None  # the innermost step an exception left

    def to_dict(self) -> dict[str, Any]:
        return {"started_at": self.started_at, "phases": self.phases,
                "failed_at": list(self.failed_at) if self.failed_at else None}


@dataclass(frozen=True)
class RunDir:
    path: Path
    progress: RunProgress = field(default_factory=RunProgress, compare=False, repr=False)

    @classmethod
    def create(cls, profile_name: str, run_id: str | None = None) -> RunDir:
        path = artifacts_root() / profile_name / (run_id or new_run_id())
        path.mkdir(parents=True, exist_ok=True)
        return cls(path)

    @property
    def run_id(self) -> str:
        return self.path.name

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
        target = self.path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")
        return target

    def write_yaml(self, name: str, data: Any) -> Path:
        target = self.path / name
        target.write_text(yaml.safe_dump(data, sort_keys=False))
        return target

    def mark_started(self) -> None:
        self.write_json("timings.json", self.progress.to_dict())

    @contextmanager
    def timed(self, phase: str, variant: str):
        """Add the block's wall time to phases[phase][variant]; an exception leaving the block
        marks it as where the run failed (the innermost block wins)."""
        start = time.monotonic()
        self.progress.active.append((phase, variant))
        try:
            yield
        except BaseException:
            if self.progress.failed_at is None:
                self.progress.failed_at = (phase, variant)
            raise
        finally:
            self.progress.active.pop()
            self.add_timing(phase, variant, time.monotonic() - start)

    def add_timing(self, phase: str, variant: str, seconds: float) -> None:
        with _TIMINGS_LOCK:
            bucket = self.progress.phases.setdefault(phase, {})
            bucket[variant] = bucket.get(variant, 0.0) + seconds
            self.write_json("timings.json", self.progress.to_dict())
