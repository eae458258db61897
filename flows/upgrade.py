"""The `upgrade` flow: one profile on two engine versions, run one after the other, side by side.

"What changed when we bumped the image?": each side runs as `specdec` would run the profile (its
speculative variant against the base, on that side's engine), with the side's backend overrides on top
of the shared ones, e.g. backend.image=nvcr.io/nvidia/tritonserver:25.01-vllm-python-py3 before and
...:25.04-vllm-python-py3 after on a GPU host, or the embedded runtime
(`backend={kind: local, draft_length: fixed}`) before vLLM's CPU engine on this one. The table names the version
facts that differ and what speedup, acceptance per draft position, tokens/s and cost did.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

from prefect import flow, get_run_logger, tags
from prefect.states import State

from flows.finish import table_or_failed
from flows.specdec import RunFailed, run_specdec
from prefect_adapters.parameters import Overrides, ProfileName, RunId, described
from prefect_adapters.refusal import checked_or_refused, handed_over, loaded_or_refused, refused_run_id
from specops.results.model import RunResult
from specops.results.role import UPGRADE, RunRole
from specops.upgrade.sides import Side, changes_engine, sides_of
from tasks.upgrade import publish_upgrade

# Only backend fields: the method, target and benchmark stay the profile's, so a change is the engine's.
BackendOverrides = Annotated[Sequence[str], described(
    "This side's engine, as backend overrides of the profile, one `key=value` each: e.g. backend.image="
    "nvcr.io/nvidia/tritonserver:25.04-vllm-python-py3 on a GPU pool, or `backend={kind: local, draft_length: "
    "fixed}` (the embedded CPU runtime, drafting K tokens every step as vLLM does). Backend fields only; empty: the "
    "profile as shipped. The two sides must differ.",
    examples=[["backend.image=nvcr.io/nvidia/tritonserver:25.04-vllm-python-py3"]])]


@flow(name="upgrade", log_prints=True)
def upgrade(profile: ProfileName, before: BackendOverrides, after: BackendOverrides, overrides: Overrides = (),
            run_id: RunId = None) -> str | State:
    """Run the profile on the before engine, then on the after engine; return the side-by-side table."""
    overrides = list(overrides or [])
    if isinstance(loaded := loaded_or_refused(profile, overrides), State):  # the one load; the sides in memory
        return loaded
    if isinstance(both := checked_or_refused(lambda: sides_of(loaded, list(before), list(after))), State):
        return both
    if (refused := refused_run_id(run_id, "upgrade", profile)) is not None:
        return refused
    sides = [side for side, _ in both]
    with handed_over(*[(profile, side.overrides, side_loaded) for side, side_loaded in both]):
        results = [_side(profile, side) for side in sides]
    return table_or_failed(f"upgrade check of {profile}", publish_upgrade(profile, sides, results, run_id), results)


def _side(profile: str, side: Side) -> RunResult | None:
    # A member of this check, not the profile's own run; a side on another engine than the profile ships with
    # stays out of the profile's regression baselines (a side as shipped is a run of it like any other).
    role = RunRole(kind=UPGRADE, of=side.label, off_engine=changes_engine(side.overrides))
    with tags(UPGRADE):  # a label for people
        try:
            return run_specdec(profile, list(side.overrides), role=role)
        except RunFailed as failed:  # recorded and reported; its column says FAILED and where
            get_run_logger().error("%s side: %s", side.label, failed)
            return failed.result
