"""What the regression flow runs: a suite of profiles, each with the overrides it runs under."""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from specops.profile.loader import LoadedProfile, load_profile

EVENT = "specops.regression.detected"  # what the flow emits per regression; prefect.yaml's automation expects it
RESOURCE_PREFIX = "specops.profile."  # the event's resource: specops.profile.<profile name>


class SuiteEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    profile: str  # a shipped profile's name (a GPU one runs through its deployment), or a YAML path
    overrides: list[str] = []


def load_suite(suite: list[SuiteEntry]) -> list[LoadedProfile]:
    """Every entry loaded and validated before anything runs: a bad entry costs no run of the others."""
    if not suite:
        raise ValueError("suite is empty: give at least one profile")
    return [load_profile(entry.profile, entry.overrides) for entry in suite]


def resource_id(profile: str) -> str:
    return f"{RESOURCE_PREFIX}{profile}"

