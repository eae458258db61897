"""vLLM facts per release (data/vllm.yaml, extracted from the PyPI archives by
tools/versions/extract_vllm.py) and the Triton vllm_backend per Triton release (data/triton_vllm.yaml).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache

from packaging.version import Version

from specops.versions.store import by_version, load


@dataclass(frozen=True)
class VllmRelease:
    version: str
    source: str  # the PyPI archive the lists were read from
    engine_args: frozenset[str]  # AsyncEngineArgs fields: the keys a model.json may carry
    speculative_config: frozenset[str] | None  # SpeculativeConfig init fields; None: no nested form
    methods: frozenset[str]  # speculative_config.method values (or the kinds the flat keys select)
    sampling_params: frozenset[str]
    unsupported: dict[str, str]  # method -> why it fails at startup (message, where)
    eagle1_unconverted: bool  # EAGLE-1 checkpoints load as published on the hub
    eagle1_where: str
    engine_under_triton: str  # "v0" | "v1" | "error-unless-VLLM_USE_V1=1"
    triton_note: str
    log_formats: tuple[dict, ...]  # spec-decode log formats: {engine, format, sample, where}

    @property
    def nested(self) -> bool:
        return self.speculative_config is not None and "speculative_config" in self.engine_args

    @property
    def flat(self) -> bool:
        return "speculative_model" in self.engine_args


def _release(version: str, row: dict) -> VllmRelease:
    log = row["spec_decode_log"]
    unsupported = {m: f"{u['message']} ({u['where']})" for m, u in (row.get("unsupported_methods") or {}).items()}
    return VllmRelease(
        version=version,
        source=f"{row['source']['file']} (sha256 {row['source']['sha256'][:12]}...)",
        engine_args=frozenset(row["engine_args"]),
        speculative_config=None if row["speculative_config"] is None else frozenset(row["speculative_config"]),
        methods=frozenset(row["speculative_methods"]),
        sampling_params=frozenset(row["sampling_params"]),
        unsupported=unsupported,
        eagle1_unconverted=bool(row["eagle1_unconverted"]),
        eagle1_where=str(row.get("eagle1_unconverted_where", "")),
        engine_under_triton=str(log["engine_under_triton_vllm_backend"]),
        triton_note=str(log.get("triton_note") or log.get("engine_note") or ""),
        log_formats=tuple(log["formats"]),
    )


@cache
def vllm_releases() -> dict[str, VllmRelease]:
    table = load("vllm")["versions"]
    return {v: _release(v, table[v]) for v in by_version(table)}


def vllm_release(version: str) -> tuple[VllmRelease, str] | None:
    """The release's facts and how they were matched: an NVIDIA pre-release build (0.9.0rc1) is
    checked against the release it led to, which the archives carry."""
    releases = vllm_releases()
    if version in releases:
        return releases[version], "exact"
    base = Version(version).base_version
    if Version(version).is_prerelease and base in releases:
        return releases[base], f"vLLM {version} is a pre-release build; checked against vLLM {base}, its release"
    return None


def first_release(predicate) -> VllmRelease | None:
    return next((r for r in vllm_releases().values() if predicate(r)), None)


def last_release(predicate) -> VllmRelease | None:
    return next((r for r in reversed(vllm_releases().values()) if predicate(r)), None)


@dataclass(frozen=True)
class VllmBackendModel:
    """Triton's vllm_backend model (src/model.py) at one Triton release."""

    release: str
    ref: str
    inputs_declared: frozenset[str]
    inputs_read: frozenset[str]
    metrics: tuple[str, ...]


def vllm_backend_commit(commit: str) -> tuple[VllmBackendModel, str] | None:
    """The facts of a vllm_backend commit a process launch serves, and where they were read."""
    row = load("triton_vllm").get("commits", {}).get(commit)
    model = vllm_backend_model(str(row["facts_of"])) if row is not None else None
    if model is None:
        return None
    return replace(model, ref=f"commit {commit[:12]}, the facts of {model.release}"), str(row["note"])


def vllm_backend_commits() -> list[str]:
    return list(load("triton_vllm").get("commits", {}))


@cache
def vllm_backend_model(triton_release: str) -> VllmBackendModel | None:
    row = load("triton_vllm")["releases"].get(triton_release)
    if row is None:
        return None
    return VllmBackendModel(triton_release, str(row["vllm_backend_ref"]), frozenset(row["model_inputs_declared"]),
                            frozenset(row["model_inputs_read"]), tuple(row.get("metrics") or ()))
