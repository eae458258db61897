"""The interface every backend implements; the pipeline only talks to this."""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from specops.methods import MethodConfig
from specops.profile.schema import Profile
from specops.report.results import Acceptance
from specops.sources.base import ModelArtifact


@dataclass(frozen=True)
class Variant:
    """One served configuration: the profile's method, or the implied base (speculation off)."""

    name: str  # "speculative" | "base" | "synthesis"
    method: MethodConfig
    # Requests the variant should serve at once; backends that batch ignore it, the embedded
    # one runs that many model instances (data synthesis sends concurrent requests).
    parallel: int = 1

    @property
    def model_name(self) -> str:
        return self.name


def variants_of(profile: Profile) -> list[Variant]:
    out = [Variant("speculative", profile.method)]
    if profile.comparison.baseline:
        out.append(Variant("base", profile.base_variant().method))
    return out


@dataclass(frozen=True)
class BenchTarget:
    """How genai-perf reaches a served model."""

    url: str
    model: str
    endpoint_type: str  # "kserve" | "completions" | "chat"
    backend: str | None  # genai-perf --backend for kserve: "vllm" | "tensorrtllm"
    streaming: bool = True
    extra_inputs: dict[str, Any] = field(default_factory=dict)  # genai-perf --extra-inputs the model needs


@dataclass(frozen=True)
class PlanStep:
    step: str
    commands: list[str] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)  # relative path -> content


class PrerequisiteError(RuntimeError):
    def __init__(self, profile: str, problems: list[str]):
        self.problems = problems
        super().__init__(f"{profile} cannot run on this machine:\n  " + "\n  ".join(problems))


class Server(Protocol):
    """A started, ready server. stop() is idempotent and bounded."""

    log_path: Path

    def stop(self, timeout_s: float) -> None: ...

    def record(self) -> dict[str, Any]: ...


class Backend(ABC):
    def __init__(self, profile: Profile):
        self.profile = profile
        self.config = profile.backend

    @abstractmethod
    def render(self, variant: Variant, target: ModelArtifact, draft: ModelArtifact | None, out_dir: Path) -> None:
        """Write the model repository (or server config) for a variant into out_dir."""

    @abstractmethod
    def launch(self, variant: Variant, repo: Path, log_path: Path) -> Server:
        """Start serving repo and return once the server and model are ready (or raise)."""

    @abstractmethod
    def generate(self, server: Server, variant: Variant, prompt: str, max_tokens: int) -> str:
        """One request at temperature 0; the text generated after the prompt."""

    @abstractmethod
    def acceptance(self, server: Server, variant: Variant, settle: bool = False) -> Acceptance | None:
        """Cumulative speculation counters from the backend's own source: None where the variant
        has none to report, Acceptance.unavailable(...) where the served framework has no source.
        `settle`: first let a source that reports at intervals catch up with the requests sent."""

    def acceptance_source(self, variant: Variant) -> str:
        """Where the variant's acceptance comes from, or why there is none (for the plan)."""
        return "none (no speculation)" if not variant.method.speculative else "the backend's counters"

    @abstractmethod
    def bench_target(self, server: Server | None, variant: Variant) -> BenchTarget:
        """Where and how genai-perf talks to the served variant (server None: for a plan, with
        placeholders where only a running server knows the value)."""

    @abstractmethod
    def plan(self, variant: Variant, target: ModelArtifact | None, draft: ModelArtifact | None) -> list[PlanStep]:
        """Commands and files a run would use, without starting anything."""

    def benchmark_notes(self) -> list[str]:
        """What the report must say about how this backend's benchmark was measured (e.g. an output
        length the served model cannot pin)."""
        return []

    def own_request(self, variant: Variant) -> dict[str, Any]:
        """The fields of specops' own smoke/check requests to the served model (for conformance)."""
        return {}

    def conformance(self, variant: Variant, requests: dict[str, list[dict[str, Any]]]) -> list[str]:
        """Everything rendered for `variant`, and the fields of `requests` (label -> request bodies),
        checked against the field lists of the framework version the backend serves; one line per
        problem, none when all conforms."""
        return []

    def build(self, variant: Variant, target: ModelArtifact, draft: ModelArtifact | None,
              out_dir: Path) -> Path | None:
        """Build what the variant serves from (TensorRT engines) into out_dir; None when the
        backend serves checkpoints directly and there is nothing to build."""
        return None

    def use_engines(self, variant: Variant, engines_dir: Path) -> None:
        """Take a (possibly cached) build's output before render()."""

    def tokenizer_dir(self, target: ModelArtifact) -> Path:
        return target.path

    def preflight(self) -> list[str]:
        """What this machine lacks to run the backend (GPU, Docker, tools), each with its fix.
        Every backend is benchmarked by genai-perf, so its toolchain is checked here."""
        from specops.bench import genai_perf  # noqa: PLC0415

        return genai_perf.preflight()


def load_backend(profile: Profile) -> Backend:
    from specops.backends import BACKENDS

    cls = BACKENDS.get(profile.backend.kind).impl_class()
    return cls(profile)
