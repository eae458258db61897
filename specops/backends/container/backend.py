"""One base for the containerised backends (vllm, trtllm, trtllm-engine, trtllm-serve).

The base owns what they all do the same way: where models appear in the container (mounted or
named by hub id), the sidecar that carries the host side of those mounts from render to launch,
free ports on the serving address, labels naming the real backend, HF_TOKEN passed by name
only, launching and waiting through the Docker launcher, and the plan. A backend supplies only
what differs: its files, its container command, its readiness probe, how clients reach it, and
its acceptance source.

Containers go through the Docker launcher (`specops.launch`); it imports docker-py only when it
talks to a daemon, so `specops plan` works on machines without Docker.
"""
from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from specops.acceptance.model import Acceptance
from specops.backends.base import Backend
from specops.backends.container.config import ContainerBackendConfig
from specops.backends.container.placement import SIDECAR, Placed, PlacedModel, placeholder, read_sidecar, sidecar
from specops.backends.container.server import ContainerServer
from specops.fields import parse_gpus
from specops.host.processes import pick_free_ports, teardown_quietly
from specops.launch import (
    LABEL_PROFILE,
    LABEL_ROLE,
    ContainerSpec,
    DockerLauncher,
    LaunchError,
    Mount,
    describe_line,
)
from specops.run.plan_step import PlanStep
from specops.run.variant import Variant
from specops.settings import cache_root, env_name
from specops.sources.hf import HUB_CACHE
from specops.sources.schemes import ModelArtifact, parse_source
from specops.triton import client
from specops.triton.client import Endpoint

HF_CACHE_IN_CONTAINER = "/root/.cache/huggingface"
# specops' hub cache (<cache>/hf, huggingface_hub's own layout) is every server container's hub cache
# too: what the download step fetched, a framework that resolves a hub id in the container finds there
# instead of downloading the checkpoint again (huggingface_hub reads HF_HUB_CACHE; its default is
# $HF_HOME/hub, i.e. this path, for images that set neither).
HF_HUB_IN_CONTAINER = f"{HF_CACHE_IN_CONTAINER}/hub"
FREE_PORT = "<free port>"


def write_files(out_dir: Path, files: dict[str, str]) -> None:
    for rel, content in files.items():
        path = Path(out_dir) / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")


class ContainerBackend(Backend):
    """What every containerised backend shares; subclasses supply files, command, probe, access."""

    config: ContainerBackendConfig
    name: ClassVar[str]  # the registry name, carried by the containers' labels
    repo_in_container: ClassVar[str]  # where the rendered files are mounted
    # Ports the server needs: Triton takes http, grpc and metrics; an OpenAI server one.
    port_names: ClassVar[tuple[str, ...]] = ("http", "grpc", "metrics")
    server_cls: ClassVar[type[ContainerServer]] = ContainerServer
    mounts_by_role: ClassVar[bool] = False  # mount models at <mount_root>/<role> (target, draft), not by their name

    # --- what a backend supplies --------------------------------------------------------
    def files(self, variant: Variant, placed: Placed) -> dict[str, str]:
        """The rendered files (relative path -> text), from where the models appear in the container."""
        raise NotImplementedError

    def command(self, variant: Variant, endpoint: Endpoint) -> list[str]:
        """The container's command for serving `variant` on `endpoint`."""
        raise NotImplementedError

    def served_model(self, variant: Variant) -> str:
        """The model name the server answers to and requests carry."""
        return variant.model_name

    def probe(self, variant: Variant, endpoint: Endpoint) -> Callable[[], bool]:
        """True once the server and the variant's model answer (here: Triton's; an OpenAI server overrides)."""
        return lambda: client.is_ready(endpoint, [self.served_model(variant)])

    def probe_description(self, variant: Variant, endpoint: Endpoint) -> str:
        return f"Triton server and model {self.served_model(variant)} ready (gRPC {endpoint.grpc_url})"

    def support(self, variant: Variant):
        """The backend's support table entry for the variant's method (what its config resolves)."""
        return self.config.resolve(variant.method)

    def version_notes(self, variant: Variant) -> list[str]:
        """What the framework version decided about this variant's rendering (for the plan)."""
        return self.support(variant).notes()

    # --- acceptance: each backend names its source, or why its image has none ---------------
    def acceptance_why(self, variant: Variant) -> str | None:
        """Why the image (or the profile) gives this speculative variant no acceptance source; None: it has one."""
        return None

    acceptance_text: ClassVar[str]  # the source, as the plan names it

    def acceptance_description(self, variant: Variant) -> str:
        return self.acceptance_text

    def read_acceptance(self, server: ContainerServer, variant: Variant, settle: bool) -> Acceptance:
        """The cumulative counters from the source."""
        raise NotImplementedError

    def serving_what(self) -> str:
        """What serves the variants, as acceptance messages name it (the image)."""
        return self.config.image

    def acceptance_source(self, variant: Variant) -> str:
        if not variant.method.speculative:
            return super().acceptance_source(variant)
        why = self.acceptance_why(variant)
        return f"unavailable on {self.serving_what()}: {why}" if why else self.acceptance_description(variant)

    def acceptance(self, server: ContainerServer, variant: Variant, settle: bool = False) -> Acceptance | None:
        if not variant.method.speculative:
            return None
        why = self.acceptance_why(variant)
        if why:
            return Acceptance.unavailable(self.serving_what(), why)
        return self.read_acceptance(server, variant, settle)

    def in_container_steps(self, variant: Variant, endpoint: Endpoint) -> list[str]:
        """Shell steps the command runs, shown one per line in the plan (none: a plain command)."""
        return []

    def mount_name(self, variant: Variant, role: str, name: str) -> str:
        """Where `role` appears in the container: <mount_root>/<its model name> (or <role>: mounts_by_role)."""
        return f"{self.config.mount_root.rstrip('/')}/{role if self.mounts_by_role else (name or role)}"

    def hub_ok(self, variant: Variant, role: str) -> bool:
        """Whether the framework in the image downloads this role's hub id itself: the target's always, a
        draft's where the support entry says so (TensorRT-LLM: only where the draft's key takes hub ids)."""
        return role == "target" or getattr(self.support(variant), "hub_draft", True)

    def container_env(self, variant: Variant | None) -> dict[str, str]:
        """Environment of the variant's containers (None: one-shot steps)."""
        return dict(self.config.env)

    # --- placement and rendering ----------------------------------------------------------
    def place_model(self, variant: Variant, role: str, source: str, artifact: ModelArtifact | None) -> PlacedModel:
        """`models: hub` names hf:// sources by repo id where the framework downloads them; anything
        else is mounted read-only (see mount_name)."""
        ref = parse_source(source)
        if self.config.models == "hub" and ref.scheme == "hf" and self.hub_ok(variant, role):
            return PlacedModel(ref.name)
        inside = self.mount_name(variant, role, Path(ref.name).name)
        host = str(artifact.path) if artifact is not None else placeholder(role)
        return PlacedModel(inside, host, inside)

    def place(self, variant: Variant, target: ModelArtifact | None, draft: ModelArtifact | None) -> Placed:
        d = self.deployment
        t = self.place_model(variant, "target", d.target_source, target)
        placed_draft = None
        if variant.method.needs_draft and d.has_draft:
            source = d.draft_source or (str(draft.path) if draft is not None else "trained-draft")
            placed_draft = self.place_model(variant, "draft", source, draft)
        return Placed(t, placed_draft)

    def all_files(self, variant: Variant, target: ModelArtifact | None, draft: ModelArtifact | None) -> dict[str, str]:
        placed = self.place(variant, target, draft)
        return self.files(variant, placed) | {SIDECAR: sidecar(self.extra_mounts(variant) + placed.mounts())}

    def extra_mounts(self, variant: Variant) -> list[tuple[str, str]]:
        """More read-only mounts (host, container) beside the models, e.g. a cached engine build."""
        return []

    def render(self, variant: Variant, target: ModelArtifact, draft: ModelArtifact | None, out_dir: Path) -> None:
        write_files(out_dir, self.all_files(variant, target, draft))

    # --- containers -----------------------------------------------------------------------
    def labels(self, variant_or_step: str, role: str) -> dict[str, str]:
        return {LABEL_PROFILE: self.deployment.profile, LABEL_ROLE: role, "specops.backend": self.name,
                "specops.run.variant": variant_or_step}

    def secret_env(self) -> tuple[str, ...]:
        """HF_TOKEN by name only, where the container downloads from the hub."""
        return (env_name("hf_token"),)

    def spec(self, command: list[str], mounts: list[tuple[str, str, bool]], labels: dict[str, str], *,
             variant: Variant | None = None, secrets: bool = True):
        """The launcher's ContainerSpec: host network, the tutorials' ulimits, secrets by name only."""
        c = self.config
        binds = list(mounts)
        env = self.container_env(variant)
        if secrets:  # the serving containers, which may resolve hub ids; one-shot steps use mounted checkpoints
            if c.hf_cache:  # the rest of an HF home (token, xet cache): the hub cache below is specops'
                binds.append((str(Path(c.hf_cache).expanduser()), HF_CACHE_IN_CONTAINER, False))
            binds.append((str(self.hub_cache()), HF_HUB_IN_CONTAINER, False))
            env = {**env, "HF_HUB_CACHE": HF_HUB_IN_CONTAINER}
        return ContainerSpec(image=c.image, command=list(command), env=env,
                             secret_env=self.secret_env() if secrets else (),
                             mounts=[Mount(Path(s), t, ro) for s, t, ro in binds], gpus=parse_gpus(c.gpus),
                             shm_size=c.shm_size, network_mode="host", ipc_mode=c.ipc, labels=labels)

    def hub_cache(self) -> Path:
        """Where the download step keeps hub snapshots (specops.sources.hf), mounted as the containers' hub cache."""
        return cache_root() / HUB_CACHE

    def server_spec(self, variant: Variant, repo: Path | str, mounts: list[tuple[str, str]], endpoint: Endpoint):
        binds = [(str(repo), self.repo_in_container, True)] + [(h, t, True) for h, t in mounts]
        return self.spec(self.command(variant, endpoint), binds, self.labels(variant.name, f"server-{variant.name}"),
                         variant=variant)

    def endpoint(self) -> Endpoint:
        """Free ports on the serving address, or the one port an OpenAI server's profile fixes (`port`)."""
        host, port = self.serving.host, getattr(self.config, "port", None)
        ports = [port] if port is not None else pick_free_ports(host, len(self.port_names))
        return Endpoint(host, *(ports + [ports[0]] * (3 - len(ports))))

    def launch(self, variant: Variant, repo: Path, log_path: Path) -> ContainerServer:
        endpoint = self.endpoint()
        self.hub_cache().mkdir(parents=True, exist_ok=True)  # a bind mount's source must exist
        spec = self.server_spec(variant, repo, read_sidecar(repo), endpoint)
        launcher = DockerLauncher()
        handle = launcher.start(spec, log_path)
        serving = self.serving
        probe = self.probe(variant, endpoint)
        try:
            launcher.wait_ready(handle, probe, serving.ready_timeout_s)
        except BaseException:
            teardown_quietly(lambda: launcher.stop(handle, serving.stop_timeout_s), f"removing {handle.name}")
            raise
        return self.server_cls(launcher, handle, log_path, spec.image, serving.stop_timeout_s, endpoint, probe)

    def preflight(self) -> list[str]:
        return list(DockerLauncher().preflight(gpus=True))

    def served(self) -> dict[str, str | None]:
        c = self.config
        image = self.image_identity
        return {"image": c.image, "image_id": image.id if image else None,
                "image_digest": image.digest if image else None,
                "framework": f"{c.framework} {c.release()}", "version_source": c.version_source()}

    @functools.cached_property
    def image_identity(self):
        """The Docker engine's Id and repo digest of the configured image (specops.launch.image), asked once
        per run; None where no engine answers or the image is absent (the run then failed before serving)."""
        try:
            return DockerLauncher().image_identity(self.config.image)
        except LaunchError:  # DockerUnavailable, ImageMissing
            return None

    def gpus(self) -> str:
        return self.config.gpus

    # --- plan -------------------------------------------------------------------------------
    def plan_endpoint(self) -> Endpoint:
        return Endpoint(self.serving.host, 0, 0, 0)

    @staticmethod
    def show_ports(text: str) -> str:
        """A planned command with the ports a run picks shown as such (the plan's endpoint has port 0)."""
        text = re.sub(r"(port[= ])0(?!\d)", rf"\g<1>{FREE_PORT}", text)
        return re.sub(r":0(?![\d.])", f":{FREE_PORT}", text)

    def plan(self, variant: Variant, target: ModelArtifact | None, draft: ModelArtifact | None) -> list[PlanStep]:
        files = self.all_files(variant, target, draft)
        mounts = [tuple(m) for m in json.loads(files[SIDECAR])["mounts"]]
        endpoint = self.plan_endpoint()
        spec = self.server_spec(variant, self.run_repo(variant), mounts, endpoint)
        serve = [self.show_ports(describe_line(spec))]
        serve += [f"(in container) {self.show_ports(s)}" for s in self.in_container_steps(variant, endpoint)]
        serve.append(self.show_ports(f"ready: {self.probe_description(variant, endpoint)}"))
        c = self.config
        version = [f"{self.serving_what()} ships {c.framework} {c.release()} ({c.version_source()}); everything "
                   "below is rendered for that version", *self.version_notes(variant)]
        return [PlanStep("version", commands=version),
                PlanStep("render", files={f"repository/{k}": v for k, v in files.items()}),
                PlanStep("serve", commands=serve)]

    @staticmethod
    def bash(steps: list[str]) -> list[str]:
        return ["bash", "-c", "set -e; " + "; ".join(steps)]
