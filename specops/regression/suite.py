"""What the regression flow runs: a suite of profiles, each with the overrides it runs under."""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from specops.profile.loader import LoadedProfile, load_profile

EVENT = "specops.regression.detected"  # what the flow emits per regression; prefect.yaml's automation expects it
RESOURCE_PREFIX = "specops.profile."  # the event's resource: specops.profile.<profile name>


class SuiteEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    profile: str = Field(description="A shipped profile (a GPU one runs through its own deployment, on its "
                         "pool), or in Python a path to a profile file")
    overrides: list[str] = Field([], description="Profile fields to change for this profile's run, one "
                                 "`key=value` each, e.g. benchmark.num_requests=8")


def load_suite(suite: list[SuiteEntry]) -> list[LoadedProfile]:
    """Every entry loaded and validated before anything runs: a bad entry costs no run of the others."""
    if not suite:
        raise ValueError("suite is empty: give at least one profile")
    return [load_profile(entry.profile, entry.overrides) for entry in suite]


def resource_id(profile: str) -> str:
    return f"{RESOURCE_PREFIX}{profile}"

