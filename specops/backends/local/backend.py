"""Backend `local`: the embedded CPU runtime as a Triton Python-backend model, served by the
tritonserver binary from nvidia-pytriton. Its I/O is the vLLM backend's, so genai-perf and
tritonclient talk to it exactly as to vLLM on Triton."""
from __future__ import annotations

import shlex
from importlib import metadata
from pathlib import Path
from typing import Any

from specops.acceptance.model import Acceptance
from specops.backends.base import Backend
from specops.backends.triton_process import TritonProcessServer, start_triton
from specops.backends.triton_server import TritonServer
from specops.methods import MethodConfig
from specops.run.plan_step import PlanStep
from specops.run.variant import Variant
from specops.settings import cache_root
from specops.sources.schemes import ModelArtifact
from specops.triton import client
from specops.triton.model_config import python_generate_config, to_pbtxt
from specops.triton.repository import TRITON_MODEL_FILE, write_python_model

ACCEPTANCE_SOURCE = "Triton metrics port (spec_decode_* counters of the embedded runtime)"


def runtime_options(method: MethodConfig, draft: ModelArtifact | None = None) -> dict[str, Any]:
    """The embedded runtime takes the method's own settings under their profile names."""
    options = method.model_dump(exclude={"kind"}, exclude_none=True)
    if method.needs_draft:
        options["draft_dir"] = str(draft.path) if draft is not None else "<draft checkpoint>"
    return options


class LocalBackend(Backend):
    def _config(self, variant: Variant, target: ModelArtifact, draft: ModelArtifact | None):
        c = self.config
        return python_generate_config(variant.model_name, model_dir=target.path, method=variant.method.kind,
                                      options=runtime_options(variant.method, draft), threads=c.threads,
                                      instances=max(c.instances, variant.parallel),
                                      adaptive_draft_length=c.draft_length == "adaptive", relaxed_topk=c.relaxed_topk)

    def render(self, variant: Variant, target: ModelArtifact, draft: ModelArtifact | None, out_dir: Path) -> None:
        write_python_model(out_dir, self._config(variant, target, draft))

    def launch(self, variant: Variant, repo: Path, log_path: Path) -> TritonProcessServer:
        triton = TritonServer(repo, log_path, backend_dir=cache_root() / "triton-backends", host=self.serving.host,
                              exit_timeout_s=self.config.exit_timeout_s)
        return start_triton(triton, self.serving.ready_timeout_s, self.serving.stop_timeout_s)

    def acceptance_source(self, variant: Variant) -> str:
        return ACCEPTANCE_SOURCE

    def acceptance(self, server: TritonProcessServer, variant: Variant, settle: bool = False) -> Acceptance | None:
        metrics = client.read_metrics(server.endpoint)
        m = {k: metrics.get(f"spec_decode_{k}", 0.0) for k in ("num_drafts", "num_draft_tokens", "num_accepted_tokens",
             "num_steps", "num_emitted_tokens", "draft_seconds", "verify_seconds")}
        return Acceptance(ACCEPTANCE_SOURCE, accepted_per_position=client.accepted_per_position(metrics), **m)

    def served(self) -> dict[str, str | None]:
        # The installed distribution's version, not torch.__version__: importing torch costs the process that
        # summarizes a run ~3.7 CPU-seconds, and the stubs that served it already ran this environment's torch.
        return {"image": None, "framework": f"specops runtime (torch {metadata.version('torch')}, CPU)",
                "version_source": "this host's Python environment"}

    def plan(self, variant: Variant, target: ModelArtifact | None, draft: ModelArtifact | None) -> list[PlanStep]:
        model_path = target.path if target else Path("<target checkpoint from the download step>")
        stand_in = ModelArtifact(model_path, self.deployment.target_source, "")
        draft_stand_in = draft or ModelArtifact(Path("<draft checkpoint>"), "", "")
        config = to_pbtxt(self._config(variant, stand_in, draft_stand_in))
        repo = f"repository/{variant.model_name}"
        serve = TritonServer.describe_command(Path(self.run_repo(variant)), host=self.serving.host,
                                              exit_timeout_s=self.config.exit_timeout_s,
                                              backend_dir=cache_root() / "triton-backends")
        return [
            PlanStep("render", files={f"{repo}/config.pbtxt": config,
                                      f"{repo}/1/model.py": f"(copy of {TRITON_MODEL_FILE})"}),
            PlanStep("serve", commands=[shlex.join(serve)]),
        ]
