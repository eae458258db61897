"""TensorRT-LLM engine path facts per release (data/trtllm_engine.yaml): convert_checkpoint.py and
trtllm-build flags, the inflight_batcher_llm templates and model I/O, launch_triton_server.py flags.

Only releases whose Triton model templates were read at the release itself (status `source`) are
served; the others are listed with why not, so a profile naming their image is refused.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from packaging.version import Version

from specops.versions.store import by_version, load, parse

DATA = "trtllm_engine"
EXAMPLES = ("eagle", "medusa", "llama")


def _names(items) -> frozenset[str]:
    """Flag/field names as the data writes them ("smoothquant (-sq)" -> "smoothquant")."""
    return frozenset((item["name"] if isinstance(item, dict) else str(item)).split(" ")[0] for item in items or [])


@dataclass(frozen=True)
class ModelIO:
    template_keys: frozenset[str]
    inputs: frozenset[str]
    outputs: frozenset[str]


@dataclass(frozen=True)
class EngineRelease:
    version: str
    backend_ref: str
    convert_paths: dict[str, str]  # example -> path under the image's examples dir parent (examples/...)
    convert_flags: dict[str, frozenset[str]]
    build_flags: frozenset[str]  # trtllm-build flags, plugin flags included
    speculative_modes: frozenset[str]
    models: dict[str, ModelIO]
    launch_flags: frozenset[str]
    fill_template_rejects_unknown: bool
    perf_metrics_input: str | None  # the request input that asks for acceptance outputs
    perf_metrics_outputs: frozenset[str]
    status: str  # of the Triton model templates: "source" (read at the release) or not

    @property
    def servable(self) -> bool:
        return self.status == "source"


def _release(version: str, row: dict) -> EngineRelease:
    convert = row["convert_checkpoint"]
    build = row["trtllm_build"]
    batcher = row["inflight_batcher_llm"]
    models = {name: ModelIO(frozenset(m.get("template_keys") or []), _names(m.get("inputs")), _names(m.get("outputs")))
              for name, m in (batcher.get("models") or {}).items()}
    perf = row.get("perf_metrics") or {}
    perf_input = perf.get("request_input")
    return EngineRelease(
        version=version,
        backend_ref=str(row.get("tensorrtllm_backend", "")),
        convert_paths={e: convert[e]["path"] for e in EXAMPLES if e in convert},
        convert_flags={e: _names(convert[e]["flags"]) for e in EXAMPLES if e in convert},
        build_flags=_names(build["flags"]) | _names(build.get("plugin_flags")),
        speculative_modes=frozenset(build.get("speculative_decoding_modes") or []),
        models=models,
        launch_flags=_names(row["launch_triton_server"]["flags"]),
        fill_template_rejects_unknown="rejected" in str(row["fill_template"].get("unknown_keys", "")),
        perf_metrics_input=perf_input.split(" ")[0] if perf_input and models else None,
        perf_metrics_outputs=_names(perf.get("outputs")) if models else frozenset(),
        status=str(batcher.get("status", "")),
    )


@cache
def engine_releases() -> dict[str, EngineRelease]:
    table = load(DATA)["versions"]
    return {v: _release(v, table[v]) for v in by_version(table)}


def engine_release(version: str) -> EngineRelease | None:
    """The release's facts; a post-release (0.17.0.post1) shares its release's files."""
    releases = engine_releases()
    return releases.get(version) or releases.get(parse(version).base_version)


def servable_versions() -> list[str]:
    return [v for v, r in engine_releases().items() if r.servable]


def first_release(predicate) -> EngineRelease | None:
    return next((r for r in engine_releases().values() if r.servable and predicate(r)), None)


def images_with(version: str) -> list[str]:
    """Triton releases whose image ships TensorRT-LLM `version` (for messages)."""
    images = load(DATA)["images"]
    return [r for r, row in images.items() if Version(parse(str(row["trtllm"])).base_version) == Version(version)]
