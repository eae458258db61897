"""The Prefect artifact keys and titles of a run's record, so that each kind of run publishes under its own.

The UI's artifact catalog shows the latest artifact of each key: the key of a profile's own runs
(`ngram-local-report`) must stay theirs, so a sweep's cells and the members of a comparison or a
calibration publish under keys of their own that name what they measured (their RunRole says which).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from specops.results.model import RunResult


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


def run_names(result: RunResult) -> ArtifactNames:
    """A sweep cell: <profile>-sweep-k<K>-c<C> (its series, k<K> or schedule, names it), titled "<profile> - K=2,
    c=4 (sweep cell)"; a member of a compare, calibrate or upgrade flow: <flow>-<profile>; a run of its own:
    <profile>."""
    parts, title = result.role.names(result.profile, result.draft_length, result.benchmark.concurrency)
    return ArtifactNames(artifact_key(*parts), title)
