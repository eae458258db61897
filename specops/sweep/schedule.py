"""The best draft length per concurrency as a recommendation: profile overrides always, and the backend's
own per-load schedule key where the framework version its profile pins has one
(data/draft_schedules.yaml says what each key means; vllm.yaml / trtllm.yaml say which versions have it)."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict

from specops.backends.container.config import ContainerBackendConfig
from specops.profile.loader import LoadedProfile
from specops.sweep.grid import K_KEY
from specops.versions.store import load
from specops.versions.trtllm import trtllm_release, trtllm_releases
from specops.versions.vllm import vllm_release, vllm_releases


class Recommendation(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    profile: str
    backend: str
    framework: str | None  # e.g. "vLLM 0.15.1"; None for the embedded runtime
    profile_overrides: dict[int, list[str]]  # concurrency -> --set overrides, where some K beats the base
    base: list[int]  # concurrencies where every K was slower than the base: serve without speculation there
    # concurrency -> why none is named (no K could be told from the base) and what would tell; the schedule keeps
    # speculation off there until it is measured again
    undecided: dict[int, str] = {}
    backend_keys: dict[str, Any] | None  # the backend's own schedule, in its config's keys
    backend_source: str | None  # the data entry and upstream files the keys follow
    # The schedule as profile overrides (the largest K, and the profile field that renders it), where the backend
    # takes it from the profile: what a sweep serves and measures after the grid (None where the sweep measured one
    # concurrency: the schedule is the series chosen there, measured already).
    schedule_overrides: list[str] | None = None
    notes: list[str] = []


@dataclass(frozen=True)
class ScheduleFact:
    """One framework's per-load draft-length key (an entry of data/draft_schedules.yaml)."""

    framework: str
    name: str
    backends: tuple[str, ...]
    key: str
    under: str
    max_key: str
    shape: str
    status: str
    evidence: tuple[str, ...]
    profile_field: str | None = None

    def source(self) -> str:
        return (f"specops/versions/data/draft_schedules.yaml schedules.{self.framework} ({self.status}): "
                + "; ".join(self.evidence[:1]))


def flow(keys: dict) -> str:
    """Keys in one line of YAML flow style: what model.json (JSON) and the LLM-API YAML both read, with
    integer batch-size keys kept integers."""
    return yaml.safe_dump(keys, default_flow_style=True, sort_keys=False, width=10_000).strip()


def schedule_facts() -> dict[str, ScheduleFact]:
    rows = load("draft_schedules")["schedules"]
    return {fw: ScheduleFact(row["framework"], row["name"], tuple(row["backends"]), row["key"], row["under"],
                             row["max_key"], row["shape"], row["status"], tuple(row["evidence"]),
                             row.get("profile_field"))
            for fw, row in rows.items()}


def _vllm_fields(version: str) -> frozenset[str] | None:
    found = vllm_release(version)
    return None if found is None else found[0].speculative_config or frozenset()


def _trtllm_fields(version: str) -> frozenset[str] | None:
    release = trtllm_release(version)
    return None if release is None else release.decoding_fields["base"]


# framework -> (the speculative-config fields of a version, every version specops has facts for, oldest first)
FIELDS: dict[str, tuple[Callable[[str], frozenset[str] | None], Callable[[], list[str]]]] = {
    "vllm": (_vllm_fields, lambda: list(vllm_releases())),
    "tensorrt-llm": (_trtllm_fields, lambda: list(trtllm_releases())),
}


def _ranges(best: dict[int, int | None]) -> list[tuple[int, int, int]]:
    """Batch-size ranges per measured concurrency: c stands for batch sizes from c up to the next measured
    one; the first range starts at 1; equal neighbours merge."""
    cs = sorted(best)
    out: list[tuple[int, int, int]] = []
    for i, c in enumerate(cs):
        start, end, k = (1 if i == 0 else c), (cs[i + 1] - 1 if i + 1 < len(cs) else c), best[c] or 0
        if out and out[-1][2] == k:
            out[-1] = (out[-1][0], end, k)
        else:
            out.append((start, end, k))
    return out


def _inclusive_ranges(fact: ScheduleFact, best: dict[int, int | None]) -> tuple[dict | None, list[str]]:
    ranges = _ranges(best)
    top = max(k for _, _, k in ranges)
    if top == 0:
        return None, []
    keys = {fact.under: {fact.max_key: top, fact.key: [list(r) for r in ranges]}}
    return keys, [f"batch sizes above {max(best)} keep K={ranges[-1][2]} ({fact.name} carries the last range "
                  "forward); not measured"]


def _upper_bounds(fact: ScheduleFact, best: dict[int, int | None]) -> tuple[dict | None, list[str]]:
    ranges = _ranges(best)
    first = ranges[0][2]
    if first == 0:
        return None, [f"no K pays at the smallest concurrency, and {fact.key} must give its smallest batch size "
                      f"{fact.max_key} (> 0): not rendered"]
    notes = []
    clamped = [(s, e, min(k, first)) for s, e, k in ranges]
    if clamped != ranges:
        notes.append(f"{fact.key} needs every K <= the K of batch size 1 ({fact.max_key}={first}); larger best K "
                     "at higher concurrency were lowered to it")
    while clamped[-1][2] == 0:  # above the largest key is 0 anyway
        clamped.pop()
    schedule = {1: first} | {e: k for _, e, k in clamped}
    notes.append(f"batch sizes above {max(schedule)} use K=0 ({fact.name} turns speculation off above the largest "
                 "key); not measured")
    if any(k == 0 for *_, k in ranges):
        notes.append("K=0 entries turn speculation off; on one-engine paths (EAGLE-3 one-model) drafter state can go "
                     "stale while off (TensorRT-LLM PR #16888)")
    return {fact.under: {fact.max_key: first, fact.key: schedule}}, notes


RENDER = {"inclusive-ranges": _inclusive_ranges, "upper-bounds": _upper_bounds}


def _fact_for(backend_kind: str) -> ScheduleFact | None:
    return next((f for f in schedule_facts().values() if backend_kind in f.backends), None)


def _backend_schedule(loaded: LoadedProfile, best: dict[int, int | None]) -> tuple[str | None, dict | None,
                                                                                   str | None, list[str]]:
    """(framework with version, keys, source, notes) for the profile's backend at its pinned version."""
    config = loaded.profile.backend
    if not isinstance(config, ContainerBackendConfig):
        return None, None, None, [f"backend {config.kind!r} has no per-load draft-length schedule: use the "
                                  "profile overrides per concurrency"]
    version = config.release()
    fact = _fact_for(config.kind)
    pinned = f"{fact.name if fact else config.framework} {version}"
    if fact is None:
        return pinned, None, None, [f"backend {config.kind!r} ({pinned}) takes no per-load draft-length schedule: "
                                    "use the profile overrides per concurrency"]
    fields_of, versions = FIELDS[fact.framework]
    keys, notes = RENDER[fact.shape](fact, best)
    if fact.key in (fields_of(version) or ()):
        if keys is None:
            notes.append("no draft length beats the base anywhere measured: no schedule; serve without speculation")
        return pinned, keys, fact.source() if keys else None, notes
    first = next((v for v in versions() if fact.key in (fields_of(v) or ())), None)
    images = [i for i in config.known_images() if first and fact.key in (fields_of(_release_of(config, i)) or ())]
    would = f"; from {fact.name} {first}" + (f" ({', '.join(images)})" if images else "") if first else ""
    rendered = f", it would be {flow(keys)}" if keys and first else ""
    return pinned, None, None, [f"{pinned} (image {config.image}) has no per-batch-size K ({fact.under}.{fact.key})"
                                f"{would}{rendered}"]


def _release_of(config: ContainerBackendConfig, image: str) -> str:
    return config.model_copy(update={"image": image, "framework_version": None}).release()


def recommend(loaded: LoadedProfile, best: dict[int, int | None], why: Mapping[int, str] | None = None,
              settings: Mapping[int, tuple[str, ...]] | None = None,
              undecided: Mapping[int, str] | None = None) -> Recommendation:
    """The sweep's best K per concurrency (analysis.best_k) as settings for this profile's backend; `why`: the
    reason of each concurrency's choice (analysis.choose_k), kept as a note where it is not the plain best;
    `settings`: the chosen series' other method overrides per concurrency; `undecided`: the concurrencies of no K
    where none could be told from the base, each with why (a measurement to repeat, not a finding). A per-load
    schedule varies K alone: where the chosen settings differ in other knobs, none is rendered."""
    settings = {c: tuple(settings.get(c, ())) if settings else () for c, k in best.items() if k is not None}
    overrides = {c: [*settings[c], f"{K_KEY}={k}"] for c, k in sorted(best.items()) if k is not None}
    undecided = {c: text for c, text in sorted((undecided or {}).items()) if best.get(c, 0) is None}
    base = sorted(c for c, k in best.items() if k is None and c not in undecided)
    framework, keys, source, notes = _backend_schedule(loaded, best)
    knobs = sorted(set(settings.values()))
    if len(knobs) > 1:
        keys, source = None, None
        notes = [f"the settings chosen differ in more than K ({'; '.join(' '.join(k) or 'the profile' for k in knobs)})"
                 ": a per-load schedule varies K alone, so none is rendered; use the profile overrides per concurrency"]
    elif keys is not None and knobs and knobs[0]:
        notes = [*notes, f"the schedule is served with {' '.join(knobs[0])} (every chosen setting's)"]
    if why is not None:
        notes = [*(f"concurrency {c}: {text}" for c, text in sorted(why.items())
                   if c not in undecided and (c in base or "cannot tell" in text)), *notes]
    elif base:
        notes = [f"concurrency {', '.join(map(str, base))}: no draft length beat the base; serve without "
                 "speculation there", *notes]
    if undecided and keys is not None:
        notes.append(f"the schedule keeps speculation off at concurrency {', '.join(map(str, undecided))}, where "
                     "the sweep could not tell: measure it again before serving it there")
    served = schedule_overrides(loaded.profile.backend.kind, keys)
    if served and len(best) == 1:  # a schedule over the one load measured is the series chosen there
        served = None
        notes.append(f"one concurrency measured: the schedule is K={next(iter(best.values()))}, the series chosen "
                     "there, measured in the grid, so it is not served again")
    return Recommendation(profile=loaded.profile.name, backend=loaded.profile.backend.kind, framework=framework,
                          profile_overrides=overrides, base=base, undecided=undecided, backend_keys=keys,
                          backend_source=source,
                          notes=notes, schedule_overrides=[*knobs[0], *served] if served and knobs else served)


def schedule_overrides(backend_kind: str, keys: dict | None) -> list[str] | None:
    """The rendered schedule as --set overrides, where the backend's profile has a field for it (None: not)."""
    fact = _fact_for(backend_kind)
    if keys is None or fact is None or fact.profile_field is None:
        return None
    section = keys[fact.under]
    return [f"{K_KEY}={section[fact.max_key]}", f"{fact.profile_field}={flow(section[fact.key])}"]
