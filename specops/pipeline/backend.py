"""The backend and the benchmark tool of a run, built once from the validated profile."""
from __future__ import annotations

from specops.backends import BACKENDS
from specops.backends.base import Backend, Deployment, make_backend
from specops.bench.tool import BenchTool, bench_tool
from specops.profile.schema import Profile


def backend_for(profile: Profile) -> Backend:
    draft = profile.draft
    return make_backend(profile.backend, Deployment(
        profile=profile.name,
        serving=profile.serving,
        target_source=profile.target.source,
        draft_source=draft.source if draft is not None else None,
        has_draft=draft is not None,
        side_by_side=2 if profile.benchmark.interleave and profile.comparison.baseline else 1,
    ))


def synthesis_backend_for(profile: Profile) -> Backend:
    """The seed's data-step server (draft.train.data.server) as backend vllm-serve, serving the profile's target."""
    section = profile.draft.train.data.server.backend_section()
    return make_backend(BACKENDS.get(section["kind"]).config_model(**section), Deployment(
        profile=profile.name, serving=profile.serving, target_source=profile.target.source))


def tool_for(profile: Profile) -> BenchTool:
    return bench_tool(profile.benchmark.tool)


def preflight(backend: Backend, tool: BenchTool) -> list[str]:
    """What stops this run here: the backend's needs, then the benchmark tool's."""
    return backend.preflight() + tool.preflight()
