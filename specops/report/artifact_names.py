"""The Prefect artifact keys and titles of a run's record, so that each kind of run publishes under its own.

The UI's artifact catalog shows the latest artifact of each key: the key of a profile's own runs
(`ngram-local-report`) must stay theirs, so a sweep's cells and the members of a comparison or a
calibration publish under keys of their own that name what they measured.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from specops.profile.loader import load_profile
from specops.results.model import SWEEP_CELL_NOTE, RunResult
from specops.sweep.grid import K_KEY, SCHEDULE_SERIES

# Tags of a flow run whose specdec subflows are members of it (flows/compare.py, flows/calibrate.py,
# flows/upgrade.py set them).
COMPARE_TAG, CALIBRATE_TAG, UPGRADE_TAG = "compare", "calibrate", "upgrade"
MEMBER_TAGS = (COMPARE_TAG, CALIBRATE_TAG, UPGRADE_TAG)


def artifact_key(*parts: str) -> str:
    """Prefect artifact keys allow lowercase letters, digits and dashes only
    (prefect/server/schemas/actions.py ArtifactCreate validates them)."""
    return re.sub(r"-+", "-", re.sub(r"[^a-z0-9-]", "-", "-".join(parts).lower())).strip("-")


@dataclass(frozen=True)
class ArtifactNames:
    prefix: str  # of every key of the run's artifacts: <prefix>-report, <prefix>-comparison, ...
    title: str  # what the run is, for the artifacts' descriptions and the report's heading

    def key(self, kind: str) -> str:
        return artifact_key(self.prefix, kind)


def member_of(tags: list[str] | set[str]) -> str | None:
    """The flow whose member a run with these tags is (compare, calibrate), or None for a run of its own."""
    return next((t for t in MEMBER_TAGS if t in tags), None)


def draft_length(result: RunResult) -> int | None:
    """K the run served: its last method.num_speculative_tokens override, else its profile's (None when the
    profile no longer loads as it ran)."""
    values = [o.partition("=")[2].strip() for o in result.overrides if o.partition("=")[0].strip() == K_KEY]
    if values and values[-1].isdigit():
        return int(values[-1])
    try:
        return load_profile(result.profile_source, list(result.overrides)).profile.method.draft_length()
    except Exception:  # noqa: BLE001 - a name only: a profile edited or removed since must not fail the report
        return None


def _load(k: int | None, c: int) -> str:
    return ", ".join(([f"K={k}"] if k else []) + [f"c={c}"])


def run_names(result: RunResult, member: str | None = None) -> ArtifactNames:
    """A sweep cell: <profile>-sweep-k<K>-c<C> (its series directory, k<K> or schedule, names it), titled
    "<profile> - K=2, c=4"; a member of a compare or calibrate flow: <flow>-<profile>; a run of its own:
    <profile>."""
    c = result.benchmark.concurrency
    if any(n.startswith(SWEEP_CELL_NOTE) for n in result.notes):
        series = Path(result.run_dir).parent.name  # flows/sweep.py: <sweep run>/<series>/c<C>
        k = draft_length(result)
        what = f"schedule up to K={k}, c={c}" if series == SCHEDULE_SERIES else _load(k, c)
        return ArtifactNames(artifact_key(result.profile, "sweep", series, f"c{c}"),
                             f"{result.profile} - {what} (sweep cell)")
    if member:
        return ArtifactNames(artifact_key(member, result.profile),
                             f"{result.profile} - {_load(draft_length(result), c)} ({member} member)")
    return ArtifactNames(artifact_key(result.profile), result.profile)
