"""Load a profile: YAML with `include:` fragments, `--set key=value` overrides, full validation.

Everything is checked here, before any download or build: unknown keys, unknown methods or
backends, unsupported method x backend pairs, malformed sources, missing prompt files.
"""
from __future__ import annotations

import copy
import difflib
import hashlib
import json
import logging
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from specops.profile.errors import ProfileError, explain
from specops.profile.schema import Profile
from specops.profile.strict_yaml import DuplicateKeyError, strict_load
from specops.settings import settings
from specops.sources.hub_datasets import is_dataset_uri

INCLUDE_KEY = "include"
# How overrides are named where they are given: the CLI's flag, a flow's parameter (prefect_adapters/refusal.py)
CLI_OVERRIDES, OVERRIDES = "--set", "overrides"
COMPARE_ORIGIN = "compare-profiles"
# Load-time warnings: a profile that is valid but not what it seems (e.g. a setting left to an engine whose default
# differs from another engine's). Logged once per process, profile file and message (a sweep loads its profile per
# cell), and kept on LoadedProfile.warnings. Under a flow run, prefect_adapters/step.py forwards `specops.*` to
# its logs; on the command line, Python's last-resort handler prints them to stderr.
log = logging.getLogger("specops.profile")
_warned: set[str] = set()


def profiles_dir() -> Path:
    """$SPECOPS_PROFILES, else ./profiles, else the profiles/ beside the installed package."""
    if (configured := settings().specops_profiles) is not None:
        return configured
    cwd = Path.cwd() / "profiles"
    return cwd if cwd.is_dir() else Path(__file__).resolve().parents[2] / "profiles"


@dataclass(frozen=True)
class LoadedProfile:
    profile: Profile
    path: Path
    overrides: tuple[str, ...]
    resolved: dict[str, Any]  # the merged document after includes and overrides, with defaults
    warnings: tuple[str, ...] = ()  # "<field>: <why>" of settings that are valid but not what they seem

    @property
    def sha256(self) -> str:
        return hashlib.sha256(json.dumps(self.resolved, sort_keys=True).encode()).hexdigest()


def resolve_path(name_or_path: str | Path) -> Path:
    candidate = Path(name_or_path)
    if candidate.suffix in (".yaml", ".yml") and candidate.is_file():
        return candidate
    named = profiles_dir() / f"{name_or_path}.yaml"
    if named.is_file():
        return named
    if candidate.is_dir():
        raise ProfileError(str(candidate), [("", "is a directory, not a profile: give a profile name or a .yaml file")])
    if candidate.exists():
        raise ProfileError(str(candidate), [("", "is not a profile: a profile file's name ends in .yaml or .yml")])
    names = list_profile_names()
    close = difflib.get_close_matches(str(name_or_path), names, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    known = ", ".join(names) or "(none)"
    raise ProfileError(str(name_or_path), [("", f"no such profile file or name; {hint}known profiles: {known}")])


def list_profile_names() -> list[str]:
    root = profiles_dir()
    return sorted(p.stem for p in root.glob("*.yaml") if not p.name.startswith("_")) if root.is_dir() else []


def deep_merge(base: dict, top: dict) -> dict:
    out = copy.deepcopy(base)
    for key, value in top.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def read_document(path: Path, chain: tuple[Path, ...] = ()) -> dict:
    """Read one YAML file, merging its includes (relative to it) underneath its own keys."""
    path = path.resolve()
    if path in chain:
        cycle = " -> ".join(p.name for p in (*chain, path))
        raise ProfileError(str(chain[0]), [(INCLUDE_KEY, f"include cycle: {cycle}")])
    try:
        data = strict_load(_read_text(path, chain)) or {}
    except DuplicateKeyError as exc:
        raise ProfileError(str(path), [(str(exc.key), f"given twice, at line {exc.first_line} and at line "
                                        f"{exc.line}; keep one")]) from None
    except yaml.YAMLError as exc:
        raise ProfileError(str(path), [("", f"not valid YAML: {_yaml_problem(exc)}")]) from None
    if not isinstance(data, dict):
        raise ProfileError(str(path), [("", "a profile must be a mapping at the top level")])
    includes = data.pop(INCLUDE_KEY, None)
    includes = [] if includes is None else [includes] if isinstance(includes, str) else includes
    if not isinstance(includes, list) or not all(isinstance(inc, str) and inc.strip() for inc in includes):
        raise ProfileError(str(path), [(INCLUDE_KEY, "expected a file name or a list of file names (relative to "
                                        f"this file, e.g. include: [_shared/embedded-cpu.yaml]), got {includes!r}")])
    merged: dict = {}
    for inc in includes:
        merged = deep_merge(merged, read_document(path.parent / inc, (*chain, path)))
    return deep_merge(merged, data)


def _read_text(path: Path, chain: tuple[Path, ...]) -> str:
    """The file as text, or a ProfileError saying why it is not a YAML file."""
    origin, field = (str(chain[-1]), INCLUDE_KEY) if chain else (str(path), "")
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ProfileError(origin, [(INCLUDE_KEY, f"included file not found: {path}")]) from None
    except IsADirectoryError:
        raise ProfileError(origin, [(field, f"{path} is a directory, not a YAML file")]) from None
    except OSError as exc:
        raise ProfileError(origin, [(field, f"cannot read {path}: {exc.strerror}")]) from None
    try:
        if b"\0" in raw:
            raise UnicodeDecodeError("utf-8", raw, raw.index(b"\0"), raw.index(b"\0") + 1, "NUL byte")
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise ProfileError(str(path), [("", f"not a text file (binary data at line {line}, byte {exc.start}); "
                                        "a profile is UTF-8 YAML")]) from None


def _yaml_problem(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None)
    if mark is None or problem is None:
        return str(exc)
    return f"{problem} at line {mark.line + 1}, column {mark.column + 1}"


def apply_overrides(doc: dict, overrides: list[str] | tuple[str, ...]) -> dict:
    """`a.b.c=value`, value parsed as YAML (so 8 is an int and true a bool)."""
    out = copy.deepcopy(doc)
    for item in overrides:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise ProfileError(CLI_OVERRIDES, [(item, "expected key=value, e.g. benchmark.num_requests=16")])
        node = out
        parts = key.strip().split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ProfileError(CLI_OVERRIDES, [(key, f"{part!r} is not a section")])
        try:
            node[parts[-1]] = strict_load(raw) if raw.strip() else ""
        except yaml.YAMLError as exc:
            why = f"value {raw!r} is not valid YAML: {_yaml_problem(exc)}"
            raise ProfileError(CLI_OVERRIDES, [(key, why)]) from None
    return out


def load_profile(name_or_path: str | Path, overrides: list[str] | tuple[str, ...] = ()) -> LoadedProfile:
    path = resolve_path(name_or_path)
    return _validated(apply_overrides(read_document(path), overrides), path, tuple(overrides))


def overridden(loaded: LoadedProfile, more: list[str] | tuple[str, ...]) -> LoadedProfile:
    """The loaded profile with `more` overrides on top, validated from memory: the file is not read again. From
    what the user set, not the defaults: a default set explicitly can be refused (a CPU trainer's under 'gpu')."""
    document = loaded.profile.model_dump(mode="json", exclude_unset=True)
    return _validated(apply_overrides(document, more), loaded.path, (*loaded.overrides, *more))


def _validated(doc: dict, path: Path, overrides: tuple[str, ...]) -> LoadedProfile:
    origin = f"{path}" + (f" (with {CLI_OVERRIDES} {' '.join(overrides)})" if overrides else "")
    try:
        profile = Profile.model_validate(doc)
    except ValidationError as err:
        raise explain(err, origin, Profile) from None
    _check_files(profile, origin)
    warnings = load_warnings(profile)
    for warning in warnings:
        if f"{path}: {warning}" not in _warned:
            _warned.add(f"{path}: {warning}")
            log.warning("%s: warning: %s", origin, warning)
    return LoadedProfile(profile, path, overrides, profile.model_dump(mode="json"), warnings)


def load_warnings(profile: Profile) -> tuple[str, ...]:
    """What the backend's support table flags for the profile's method (its `load_warnings`: (field, why) pairs)."""
    support = profile.backend.resolve(profile.method)
    return tuple(f"{field}: {why}" for field, why in getattr(support, "load_warnings", ()))


def _check_prompts(profile: Profile) -> list[tuple[str, str]]:
    """The prompts a run will send, checked now where they can be: a file read in full (a malformed line, or a
    category it lacks, must stop the run before any download), a named workload against its catalogue entry."""
    from specops.bench.prompts import HUMANEVAL, PromptFileError, read_records
    from specops.bench.sampling import WorkloadError, check_categories, known_categories, select

    b = profile.benchmark
    try:
        if (known := known_categories(b.prompts)) is not None or b.prompts.lower() == HUMANEVAL:
            check_categories(b, known or {}, b.prompts)
        elif not is_dataset_uri(b.prompts):  # a dataset's file is checked once fetched, at the download step
            path = Path(b.prompts)
            if not path.is_file():
                return [("benchmark.prompts", f"{'not a file' if path.exists() else 'file not found'}: {path}")]
            select(read_records(path), b, profile.comparison.lossless_prompts, str(path))
    except PromptFileError as err:
        return [("benchmark.prompts", f"{err.path}, line {err.line_no}: {err.reason}")]
    except WorkloadError as err:
        return [(err.field, err.reason)]
    except OSError as err:  # e.g. a .jsonl.gz that is not gzip
        return [("benchmark.prompts", f"cannot read {b.prompts}: {err}")]
    return []


def _check_files(profile: Profile, origin: str) -> None:
    problems = _check_prompts(profile)
    for section in ("target", "draft"):
        src = getattr(profile, section)
        source = getattr(src, "source", None)
        if source is not None and "://" not in source and not source.startswith("embedded:"):
            if not (Path(source) / "config.json").is_file():
                problems.append((f"{section}.source", f"no checkpoint (config.json) at {source}"))
    train = profile.draft.train if profile.draft is not None else None
    # A dataset file (hf://datasets/...) is read in full once fetched, before synthesis starts.
    if train is not None and train.data.conversations and not is_dataset_uri(train.data.conversations):
        from specops.bench.conversations import DataFileError, read_conversations

        # Read in full now: a malformed line must stop the run before any download or training.
        try:
            read_conversations(train.data.conversations)
        except DataFileError as err:
            problems.append(("draft.train.data.conversations", str(err)))
    if problems:
        raise ProfileError(origin, problems)


def check_comparable(loaded: list[LoadedProfile]) -> None:
    """What `compare-profiles` may put side by side: two or more different profiles of one target model.
    Raise ProfileError naming what makes these loaded profiles (one per argument) no comparison."""
    same: dict[str, list[str]] = defaultdict(list)
    for lp in loaded:
        same[lp.sha256].append(str(lp.path))
    twice = [paths for paths in same.values() if len(paths) > 1]
    targets = {lp.profile.name: lp.profile.target.source for lp in loaded}
    if len(loaded) < 2:
        why = f"compare needs two profiles or more; got {[str(lp.path) for lp in loaded]}"
    elif twice:
        # The same profile twice measured the host's noise, not two methods (it once printed 1.43x and
        # 0.46x for one profile, without a word); `specops run` it twice and `specops compare` the runs,
        # which warns when their intervals disagree.
        why = ("compare puts different profiles side by side; these resolve to the same profile: "
               + "; ".join(" and ".join(paths) for paths in twice)
               + ". To measure one profile twice, `specops run` it twice and `specops compare` the runs")
    elif len(set(targets.values())) > 1:
        why = ("compare puts profiles of one target model side by side; these differ: "
               + ", ".join(f"{name}: {source}" for name, source in targets.items()))
    else:
        return
    raise ProfileError(COMPARE_ORIGIN, [("profiles", why)])
