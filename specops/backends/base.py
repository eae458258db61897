"""The interface every backend implements; the pipeline only talks to this."""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from specops.acceptance.model import Acceptance
from specops.backends.spec import BackendConfig
from specops.bench.target import Api, BenchTarget, addresses
from specops.run.plan_step import PlanStep
from specops.run.server_settings import Serving
from specops.run.variant import Variant
from specops.sources.schemes import ModelArtifact
from specops.triton import client


@dataclass(frozen=True)
class Deployment:
    """What a backend needs to know about its run beside its own config section."""

    profile: str  # the profile's name: container labels and run paths carry it
    serving: Serving
    target_source: str
    draft_source: str | None = None  # a draft checkpoint to place; None when trained here or absent
    has_draft: bool = False
    side_by_side: int = 1  # how many of the run's servers are up on this host at once (2: both variants)


class PrerequisiteError(RuntimeError):
    def __init__(self, profile: str, problems: list[str]):
        self.problems = problems
        super().__init__(f"{profile} cannot run on this machine:\n  " + "\n  ".join(problems))


class Server(Protocol):
    """A started, ready server. stop() is idempotent and bounded."""

    log_path: Path

    def stop(self, timeout_s: float) -> None: ...

    def record(self) -> dict[str, Any]: ...

    def cpu_seconds(self) -> float:
        """CPU time the whole server has used so far (its process tree, or its container)."""
        ...

    def version(self) -> tuple[str, str]:
        """(server tool, version) as the running server reports them."""
        ...

    # What specops.host.liveness.Watchdog asks while a phase talks to the server.
    def describe(self) -> str:
        """The server as a message names it ("tritonserver pid 123", "container specops-...")."""
        ...

    def state(self) -> str | None:
        """Why it cannot serve, from its process or container (exited, killed, stopped, paused);
        None while it runs. Cheap: asked every second."""
        ...

    def answers(self, timeout_s: float) -> bool:
        """Its readiness endpoint answered within timeout_s."""
        ...

    def log_tail(self, lines: int = 20) -> str: ...


class Backend(ABC):
    def __init__(self, config: BackendConfig, deployment: Deployment):
        self.config = config
        self.deployment = deployment
        self.serving = deployment.serving

    @property
    def registration(self):
        """This backend's registry entry (methods it serves, APIs its servers answer)."""
        from specops.backends import BACKENDS  # noqa: PLC0415

        return BACKENDS.get(self.config.kind)

    def cache_identity(self) -> dict[str, Any]:
        """What a cached render or build of this backend depends on (beside variant and models)."""
        return {"config": self.config.model_dump(mode="json"), "profile": self.deployment.profile,
                "target": self.deployment.target_source, "draft": self.deployment.draft_source,
                "serving": self.serving.model_dump(mode="json")}

    @abstractmethod
    def render(self, variant: Variant, target: ModelArtifact, draft: ModelArtifact | None, out_dir: Path) -> None:
        """Write the model repository (or server config) for a variant into out_dir."""

    @abstractmethod
    def launch(self, variant: Variant, repo: Path, log_path: Path) -> Server:
        """Start serving repo and return once the server and model are ready (or raise)."""

    def generate(self, server: Server, variant: Variant, prompt: str, max_tokens: int) -> str:
        """One request at temperature 0; the text generated after the prompt. Here in the I/O of Triton's vLLM
        backend (specops.triton.client.generate), which the local backend's model speaks too."""
        return client.generate(server.endpoint, variant.model_name, prompt, max_tokens, temperature=0.0,  # type: ignore[attr-defined]
                               timeout_s=self.serving.request_timeout_s)

    def generate_chat(self, server: Server, variant: Variant, prompt: str, max_tokens: int) -> str:
        """One chat request at temperature 0 (`bench.prompts.chat_messages(prompt)`, the server applying the target's
        chat template); the answer's text. Only backends that register a chat API have one."""
        raise NotImplementedError(f"backend {self.config.kind!r} serves no chat endpoint")

    @abstractmethod
    def acceptance(self, server: Server, variant: Variant, settle: bool = False) -> Acceptance | None:
        """Cumulative speculation counters from the backend's own source: None where the variant
        has none to report, Acceptance.unavailable(...) where the served framework has no source.
        `settle`: first let a source that reports at intervals catch up with the requests sent."""

    def replays_here(self) -> bool:
        """Whether `specops replay` runs this backend's own drafters on this host (the same engine build), so a run
        can report the replay's prediction beside what the engine counted."""
        return False

    def acceptance_source(self, variant: Variant) -> str:
        """Where the variant's acceptance comes from, or why there is none (for the plan)."""
        return "none (no speculation)" if not variant.method.speculative else "the backend's counters"

    def endpoints(self, server: Server | None) -> dict[Api, str]:
        """Each API the backend registers -> its address on `server`; for a plan (server None), the serving host
        with placeholders for the ports only a running server knows."""
        e = server.endpoint if server is not None else None
        host = self.serving.host
        return addresses(self.registration.apis, grpc=e.grpc_url if e else f"{host}:<grpc port>",
                         http=e.http_base if e else f"http://{host}:<http port>")

    def bench_target(self, server: Server | None, variant: Variant) -> BenchTarget:
        """How a load generator reaches the served variant (server None: for a plan, with
        placeholders where only a running server knows the value); here its model by the variant's name, streamed."""
        return BenchTarget(model=variant.model_name, endpoints=self.endpoints(server), streaming=True)

    @abstractmethod
    def plan(self, variant: Variant, target: ModelArtifact | None, draft: ModelArtifact | None) -> list[PlanStep]:
        """Commands and files a run would use, without starting anything."""

    @abstractmethod
    def served(self) -> dict[str, str | None]:
        """What serves the variants: {"image", "framework" (name and version), "version_source"}."""

    def benchmark_notes(self, variant: Variant) -> list[str]:
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

    def run_repo(self, variant: Variant) -> str:
        """Where a run stages the variant's rendered repository, as a plan shows it."""
        return f"artifacts/{self.deployment.profile}/<run-id>/repository/{variant.name}"

    def tokenizer_dir(self, target: ModelArtifact) -> Path:
        return target.path

    def fetch_sources(self, cache_dir: Path, log: Callable[[str], None]) -> dict[str, str]:
        """Fetch and verify every remote source the servers will use besides the models (upstream backend code),
        at the download step: a source that cannot be reached fails there. {field: sha256} of what it fetched."""
        return {}

    def gpus(self) -> str:
        """The GPUs its servers use, as a profile names them ("all", a count, ids; "none")."""
        return "none"

    def preflight(self) -> list[str]:
        """What this machine lacks to run the backend (GPU, Docker, binaries), each with its fix."""
        return []


def make_backend(config: BackendConfig, deployment: Deployment) -> Backend:
    """The backend implementation registered for `config.kind`, built for one run."""
    from specops.backends import BACKENDS  # noqa: PLC0415  (the registry imports the configs, not us)

    return BACKENDS.get(config.kind).impl_class()(config, deployment)
