"""Load a profile: YAML with `include:` fragments, `--set key=value` overrides, full validation.

Everything is checked here, before any download or build: unknown keys, unknown methods or
backends, unsupported method x backend pairs, malformed sources, missing prompt files.
"""
from __future__ import annotations

import copy
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from specops.profile.errors import ProfileError, explain
from specops.profile.schema import Profile

INCLUDE_KEY = "include"


def profiles_dir() -> Path:
    """$SPECOPS_PROFILES, else ./profiles, else the profiles/ beside the installed package."""
    if env := os.environ.get("SPECOPS_PROFILES"):
        return Path(env)
    cwd = Path.cwd() / "profiles"
    return cwd if cwd.is_dir() else Path(__file__).resolve().parents[2] / "profiles"


@dataclass(frozen=True)
class LoadedProfile:
    profile: Profile
    path: Path
    overrides: tuple[str, ...]
    resolved: dict[str, Any]  # the merged document after includes and overrides, with defaults

    @property
    def sha256(self) -> str:
        return hashlib.sha256(json.dumps(self.resolved, sort_keys=True).encode()).hexdigest()


def resolve_path(name_or_path: str | Path) -> Path:
    candidate = Path(name_or_path)
    if candidate.suffix in (".yaml", ".yml") and candidate.exists():
        return candidate
    named = profiles_dir() / f"{name_or_path}.yaml"
    if named.exists():
        return named
    known = ", ".join(list_profile_names()) or "(none)"
    raise ProfileError(str(name_or_path), [("", f"no such profile file or name; known profiles: {known}")])


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
        data = yaml.safe_load(path.read_text()) or {}
    except FileNotFoundError:
        origin = str(chain[-1]) if chain else str(path)
        raise ProfileError(origin, [(INCLUDE_KEY, f"included file not found: {path}")]) from None
    except yaml.YAMLError as exc:
        raise ProfileError(str(path), [("", f"not valid YAML: {exc}")]) from None
    if not isinstance(data, dict):
        raise ProfileError(str(path), [("", "a profile must be a mapping at the top level")])
    includes = data.pop(INCLUDE_KEY, [])
    includes = [includes] if isinstance(includes, str) else includes
    merged: dict = {}
    for inc in includes:
        merged = deep_merge(merged, read_document(path.parent / inc, (*chain, path)))
    return deep_merge(merged, data)


def apply_overrides(doc: dict, overrides: list[str] | tuple[str, ...]) -> dict:
    """`a.b.c=value`, value parsed as YAML (so 8 is an int and true a bool)."""
    out = copy.deepcopy(doc)
    for item in overrides:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise ProfileError("--set", [(item, "expected key=value, e.g. benchmark.num_requests=16")])
        node = out
        parts = key.strip().split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ProfileError("--set", [(key, f"{part!r} is not a section")])
        node[parts[-1]] = yaml.safe_load(raw) if raw.strip() else ""
    return out


def load_profile(name_or_path: str | Path, overrides: list[str] | tuple[str, ...] = ()) -> LoadedProfile:
    path = resolve_path(name_or_path)
    doc = apply_overrides(read_document(path), overrides)
    origin = f"{path}" + (f" (with --set {' '.join(overrides)})" if overrides else "")
    try:
        profile = Profile.model_validate(doc)
    except ValidationError as err:
        raise explain(err, origin, Profile) from None
    _check_files(profile, origin)
    return LoadedProfile(profile, path, tuple(overrides), profile.model_dump(mode="json"))


def _check_files(profile: Profile, origin: str) -> None:
    problems = []
    if profile.benchmark.prompts != "humaneval" and not Path(profile.benchmark.prompts).is_file():
        problems.append(("benchmark.prompts", f"file not found: {profile.benchmark.prompts}"))
    for section in ("target", "draft"):
        src = getattr(profile, section)
        source = getattr(src, "source", None)
        if source is not None and "://" not in source and not source.startswith("embedded:"):
            if not (Path(source) / "config.json").is_file():
                problems.append((f"{section}.source", f"no checkpoint (config.json) at {source}"))
    train = profile.draft.train if profile.draft is not None else None
    if train is not None and train.data.conversations:
        from specops.draft.conversations import DataFileError, read_conversations

        # Read in full now: a malformed line must stop the run before any download or training.
        try:
            read_conversations(train.data.conversations)
        except DataFileError as err:
            problems.append(("draft.train.data.conversations", str(err)))
    if problems:
        raise ProfileError(origin, problems)
