"""The trtllm-engine support table: (method settings, TensorRT-LLM release in the image) -> what is
built, filled and served, or a profile error naming the field.

Pure and light (profile validation imports it). Facts come from specops.versions.engine.
"""
from __future__ import annotations

from dataclasses import dataclass

from specops.backends.spec import FieldError
from specops.versions.engine import EngineRelease, engine_release, first_release, images_with, servable_versions

# trtllm-build --speculative_decoding_mode per specops method.
SPEC_MODE = {"eagle": "eagle", "medusa": "medusa", "draft-target": "draft_tokens_external"}
# Every method a servable release can build, derived from the data.
METHODS = frozenset({"none"} | {m for m, mode in SPEC_MODE.items()
                                if first_release(lambda r, mode=mode: mode in r.speculative_modes)})


@dataclass(frozen=True)
class EngineSupport:
    release: EngineRelease
    method: str
    spec_mode: str | None
    served_model: str  # what clients call: ensemble, or tensorrt_llm_bls for draft-target
    acceptance_why: str | None  # None: the served model returns perf-metric outputs

    @property
    def perf_metrics(self) -> bool:
        return self.acceptance_why is None


def _release(config) -> EngineRelease:
    version = config.release()
    release = engine_release(version)
    if release is None or not release.servable:
        images = ", ".join(f"{v} ({'/'.join(images_with(v))})" for v in servable_versions())
        raise FieldError("backend.image", f"image {config.image} ships TensorRT-LLM {version} "
                          f"({config.version_source()}); specops serves the engine path only on releases whose "
                          f"inflight_batcher_llm templates were read at the release: {images}")
    return release


def _check_flags(release: EngineRelease, config) -> None:
    for field in ("build_flags", "base_build_flags", "draft_build_flags"):
        unknown = sorted(set(getattr(config, field)) - release.build_flags)
        if unknown:
            later = first_release(lambda r, wanted=frozenset(unknown): wanted <= r.build_flags)
            where = f"; first in TensorRT-LLM {later.version}" if later and later.version != release.version else ""
            raise FieldError(f"backend.{field}", f"trtllm-build of TensorRT-LLM {release.version} (image "
                              f"{config.image}) has no flag {', '.join('--' + f for f in unknown)}{where}")
    for model, keys in config.triton.extra.items():
        io = release.models.get(model)
        if io is None:
            raise FieldError("backend.triton.extra", f"inflight_batcher_llm ({release.backend_ref}) has no model "
                              f"{model!r}; models: {', '.join(sorted(release.models))}")
        unknown = sorted(set(keys) - io.template_keys)
        if unknown:
            raise FieldError("backend.triton.extra", f"{model}/config.pbtxt of {release.backend_ref} has no "
                              f"${{...}} key {', '.join(unknown)}; keys: {', '.join(sorted(io.template_keys))}")


def acceptance_why(release: EngineRelease) -> str | None:
    if release.perf_metrics_input:
        return None
    first = first_release(lambda r: r.perf_metrics_input is not None)
    later = (f"; first in tensorrtllm_backend {first.backend_ref} (TensorRT-LLM {first.version}, image "
             f"{'/'.join(images_with(first.version))}-trtllm-python-py3)") if first else ""
    return (f"tensorrtllm_backend {release.backend_ref} (TensorRT-LLM {release.version}) declares no "
            f"return_perf_metrics input and no total_draft_tokens output{later}")


def resolve(config, method) -> EngineSupport:
    release = _release(config)
    kind = method.kind
    if kind != "none" and kind not in SPEC_MODE:
        raise FieldError("method.kind", f"trtllm-engine builds {', '.join(sorted(METHODS))}, not {kind!r}")
    mode = SPEC_MODE.get(kind)
    if mode is not None and mode not in release.speculative_modes:
        raise FieldError("method.kind", f"trtllm-build of TensorRT-LLM {release.version} has no "
                          f"--speculative_decoding_mode {mode}")
    if kind != "medusa" and getattr(method, "medusa_choices", None):
        raise FieldError("method.medusa_choices", "medusa_choices apply to method medusa only")
    _check_flags(release, config)
    served = "tensorrt_llm_bls" if kind == "draft-target" else "ensemble"
    return EngineSupport(release, kind, mode, served, acceptance_why(release))
