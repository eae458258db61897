"""The LLM-API support table shared by `trtllm` (Triton's llmapi model) and `trtllm-serve`: both
hand TensorRT-LLM the same LLM-API args, so one function maps (method settings, the TensorRT-LLM
release in the image) to the speculative_config it accepts, or a profile error naming the field.

Pure and light (profile validation imports it). Facts come from specops.versions.trtllm.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from specops.backends.spec import FieldError
from specops.versions.trtllm import TrtllmRelease, first_with, nested_fields, trtllm_release, trtllm_releases

# decoding_type spellings per specops method, preferred first; the release decides which exist.
# "Eagle" serves EAGLE-3 heads on the PyTorch backend (releases with eagle_is_eagle3).
DECODING_TYPES = {"eagle3": ("Eagle3", "Eagle"), "draft-target": ("DraftTarget", "Draft_Target"),
                  "ngram": ("NGram",)}
ELSEWHERE = {
    "eagle": "EAGLE-1 heads do not run on the LLM API / PyTorch backend (decoding_type Eagle serves EAGLE-3 "
             "heads there); build an EAGLE-1 engine with backend 'trtllm-engine'",
    "medusa": "Medusa does not run on the LLM API / PyTorch backend; build a Medusa engine with backend "
              "'trtllm-engine'",
}
METHODS = frozenset({"none"} | {m for m, names in DECODING_TYPES.items()
                                if first_with(lambda r, names=names: set(names) & r.decoding_types)})


def where(release: TrtllmRelease) -> str:
    return f"TensorRT-LLM {release.version}"


def _first(predicate, what: str) -> str:
    later = first_with(predicate)
    return f"; {what} first in TensorRT-LLM {later.version}" if later else f"; no TensorRT-LLM specops knows has {what}"


@dataclass(frozen=True)
class LlmApiSupport:
    release: TrtllmRelease
    image: str
    decoding_type: str | None  # None: no speculation
    model_key: str | None  # the draft's key in speculative_config (None without a draft)

    @property
    def hub_draft(self) -> bool:
        """Whether TensorRT-LLM downloads a hub id given as the draft (else the draft is mounted)."""
        return self.release.hub_draft and self.model_key == self.release.model_keys[0]

    def notes(self) -> list[str]:
        """Where the release's spelling departs from the newest TensorRT-LLM's, and why."""
        r, out = self.release, []
        if self.decoding_type == "Eagle" and "Eagle3" not in r.decoding_types:
            out.append(f"decoding_type Eagle: {where(r)} has no Eagle3" + _first(lambda x: "Eagle3" in x.decoding_types,
                       "Eagle3") + "; Eagle serves EAGLE-3 heads on its PyTorch backend")
        if self.decoding_type == "DraftTarget" and "Draft_Target" not in r.decoding_types:
            out.append(f"decoding_type DraftTarget: {where(r)} rejects Draft_Target (\"Invalid decoding type\")")
        if self.model_key is not None and not self.hub_draft:
            out.append(f"{self.model_key} takes a local path in {where(r)}: the draft is mounted"
                       + _first(lambda x: x.hub_draft, "hub download of drafts"))
        return out

    def speculative_config(self, method, draft: str | None) -> dict[str, Any] | None:
        if self.decoding_type is None:
            return None
        spec: dict[str, Any] = {"decoding_type": self.decoding_type, "max_draft_len": method.draft_length()}
        if method.kind == "ngram":
            spec["max_matching_ngram_size"] = method.prompt_lookup_max
        elif draft is not None:
            spec[self.model_key] = draft
        return spec


def release_of(config) -> TrtllmRelease:
    version = config.release()
    release = trtllm_release(version)
    if release is None:
        raise FieldError("backend.image", f"image {config.image} ships TensorRT-LLM {version} "
                          f"({config.version_source()}); specops has LLM-API field lists for TensorRT-LLM "
                          f"{', '.join(trtllm_releases())} only")
    return release


def _decoding_type(config, release: TrtllmRelease, kind: str) -> str:
    names = DECODING_TYPES[kind]
    chosen = config.decoding_type
    if chosen is not None and chosen not in names:
        raise FieldError("backend.decoding_type", f"method {kind!r} is decoding_type {' or '.join(names)}, "
                          f"not {chosen!r}")
    candidates = [chosen] if chosen else list(names)
    if "Eagle" in candidates and not release.eagle_is_eagle3:
        candidates.remove("Eagle")
    found = [n for n in candidates if n in release.decoding_types]
    if not found:
        want = chosen or " / ".join(names)
        raise FieldError("backend.decoding_type" if chosen else "method.kind",
                          f"{where(release)} (image {config.image}) accepts decoding_type "
                          f"{', '.join(sorted(release.decoding_types))}, not {want}"
                          + _first(lambda r: set(candidates) & r.decoding_types, f"decoding_type {want}"))
    return found[0]


def _model_key(config, release: TrtllmRelease, decoding_type: str) -> str:
    key = config.speculative_model_key or release.model_keys[0]
    if key not in release.fields_of(decoding_type):
        raise FieldError("backend.speculative_model_key", f"{where(release)} (image {config.image}) names the "
                          f"draft with {' or '.join(release.model_keys)}, not {key}"
                          + _first(lambda r: key in r.fields_of(decoding_type), key))
    return key


def resolve(config, method) -> LlmApiSupport:
    """What speculative_config the image's TensorRT-LLM accepts for `method`."""
    release = release_of(config)
    kind = method.kind
    if kind == "none":
        return LlmApiSupport(release, config.image, None, None)
    if kind in ELSEWHERE:
        raise FieldError("method.kind", ELSEWHERE[kind])
    if kind not in DECODING_TYPES:
        raise FieldError("method.kind", f"the LLM API serves {', '.join(sorted(METHODS))}, not {kind!r}")
    decoding_type = _decoding_type(config, release, kind)
    if kind == "ngram":
        if method.prompt_lookup_min not in (None, 1):
            raise FieldError("method.prompt_lookup_min", "TensorRT-LLM's NGram drafter matches from "
                              "max_matching_ngram_size down to 1; set method.prompt_lookup_min: 1")
        return LlmApiSupport(release, config.image, decoding_type, None)
    return LlmApiSupport(release, config.image, decoding_type, _model_key(config, release, decoding_type))


def check_llm_args(release: TrtllmRelease, keys: Iterable[str], field: str, image: str) -> None:
    """Refuse pass-through LLM-API args the release rejects (extra="forbid"), naming where they arrive."""
    for key in keys:
        known_absent = key in release.llm_args_absent
        if known_absent or (release.llm_args_complete and key not in release.llm_args):
            raise FieldError(field, f"{where(release)} (image {image}) has no LLM-API arg {key!r}"
                              + _first(lambda r, key=key: key in r.llm_args and key not in r.llm_args_absent, key))


def llm_args_findings(label: str, doc: dict[str, Any], release: TrtllmRelease) -> list[str]:
    """A rendered LLM-API document (model.yaml without triton_config, or the extra options YAML)
    against the release: every key an LLM-API arg, nested args' keys known, speculative_config spelled
    as the release parses it."""
    v = where(release)
    found = [f"{label}: {k!r} is not an LLM-API arg of {v}" for k in doc if k not in release.llm_args]
    for key, known in nested_fields().items():
        found += [f"{label}: {key}.{k} is not a verified field of {v}" for k in doc.get(key) or {} if k not in known]
    spec = doc.get("speculative_config")
    if spec is not None:
        dtype = spec.get("decoding_type")
        if dtype not in release.decoding_types:
            found.append(f"{label}: decoding_type {dtype!r} is not accepted by {v}")
        else:
            found += [f"{label}: speculative_config.{k} is not a field of {dtype} in {v}"
                      for k in spec if k != "decoding_type" and k not in release.fields_of(dtype)]
    return found
