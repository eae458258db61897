"""Hold a run's slots (specops/cost/slots.py): its accelerator slots as Prefect global concurrency limits of
1 (a second run on the same GPU waits, and its log says for which slot and behind which flow run),
then its host locks (specops/host/host_lock.py), which also order runs that use another Prefect API.

prefect.concurrency.sync.concurrency skips a limit that does not exist (a warning, no wait), so each
is created first with limit 1; one an operator has changed is left as it is. Prefect's API does not
say who holds a global limit, so while a run holds its slots its flow run carries a tag per slot
(`slot:<name>`, visible in the UI); a waiting run names the running flow runs with that tag.
"""
from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, nullcontext
from dataclasses import dataclass, field

from prefect import get_run_logger, runtime
from prefect.client.orchestration import get_client
from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate
from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterState, FlowRunFilterStateType, FlowRunFilterTags
from prefect.client.schemas.objects import ConcurrencyLeaseHolder, StateType
from prefect.concurrency.sync import concurrency
from prefect.exceptions import ObjectAlreadyExists, ObjectNotFound

from specops.cost.slots import RunSlots
from specops.host.host_lock import hold_host_locks
from specops.run.rundir import RUNNING, RunDir

TAG = "slot:"
REPORT_EVERY_S = 60.0  # a waiting run says again whom it waits for (the holder may change)


@dataclass
class Held:
    names: list[str]
    started_at: float = field(default_factory=time.time)  # once every slot was held
    waited_s: float = 0.0


def _ensure_limits(client, names: list[str]) -> list[str]:
    """Create the missing limits (limit 1); the names of those that are full right now."""
    full = []
    for name in names:
        try:
            limit = client.read_global_concurrency_limit_by_name(name)
        except ObjectNotFound:
            try:
                client.create_global_concurrency_limit(GlobalConcurrencyLimitCreate(name=name, limit=1))
            except ObjectAlreadyExists:  # another run created it meanwhile
                pass
            limit = client.read_global_concurrency_limit_by_name(name)
        if limit.active and limit.active_slots >= limit.limit:
            full.append(name)
    return full


def holders(client, names: list[str]) -> list[str]:
    """The running flow runs tagged with any of these slots, as `name (id)`."""
    found = {}
    for name in names:
        runs = client.read_flow_runs(flow_run_filter=FlowRunFilter(
            tags=FlowRunFilterTags(all_=[TAG + name]),
            state=FlowRunFilterState(type=FlowRunFilterStateType(any_=[StateType.RUNNING]))))
        found.update({str(r.id): f"flow run {r.name} ({r.id})" for r in runs})
    return sorted(found.values())


def _waiting(client, names: list[str], full: list[str]) -> str:
    try:
        who = holders(client, full) or ["a run that has not tagged itself yet"]
    except Exception as exc:  # noqa: BLE001 -- naming the holder must not fail a run that waits
        who = [f"a run the API did not name ({exc})"]
    return (f"waiting for {', '.join(full)} (one benchmark per {'GPU' if names[0].startswith('gpu:') else 'host'}): "
            f"held by {', '.join(who)}")


def _tag(client, flow_run_id, names: list[str], held: bool) -> None:
    """Add (held) or remove this run's slot tags; a failure only costs the waiting runs a name."""
    try:
        tags = set(client.read_flow_run(flow_run_id).tags)
        mine = {TAG + n for n in names}
        client.update_flow_run(flow_run_id, tags=sorted(tags | mine if held else tags - mine))
    except Exception as exc:  # noqa: BLE001
        get_run_logger().warning("could not %s the slot tags of flow run %s: %s", "set" if held else "clear",
                                 flow_run_id, exc)


WAIT_STEP = "waiting for"  # the step status.json names while a run waits (its variant: the slots and locks)
HELD_STEP = "holding"  # once it holds them, until its next step says where it is


@contextmanager
def hold_slots(slots: RunSlots, who: str, run: RunDir | None = None) -> Iterator[Held]:
    """Hold the run's Prefect slots, then its host locks, for the duration; waits as long as any is
    taken. `who` names the run to the runs waiting behind it; `run`'s status says what it waits for, and a run
    ended while it waits ended there."""
    logger = get_run_logger()
    names = ", ".join(dict.fromkeys([*slots.limits, *slots.locks]))
    with ExitStack() as stack:
        with run.timed(WAIT_STEP, names) if run is not None and names else nullcontext():
            held = stack.enter_context(_hold_limits(slots.limits))
            locked_s = stack.enter_context(hold_host_locks(slots.locks, who, logger.info))
        if locked_s >= 1:
            logger.info("holding the host lock(s) %s after waiting %.0fs", ", ".join(slots.locks), locked_s)
        held.names = list(dict.fromkeys([*held.names, *slots.locks]))
        held.waited_s += locked_s
        held.started_at = time.time()
        if run is not None and names and run.progress.failed_at is None:
            # Said at once: a sweep's own directory announces no step after this (its cells do), and said `waiting
            # for` while it measured (issue 51)
            run.set_status(RUNNING, HELD_STEP, names)
        yield held


@contextmanager
def _hold_limits(names: list[str]) -> Iterator[Held]:
    """Hold every Prefect slot in `names` (none: hold nothing) for the duration."""
    if not names:
        yield Held([])
        return
    logger = get_run_logger()
    flow_run_id = runtime.flow_run.id
    holder = ConcurrencyLeaseHolder(type="flow_run", id=flow_run_id) if flow_run_id else None
    # Entered before the lease is taken: whatever interrupts the run after that (a cancellation
    # between two API calls) releases it, instead of leaving its renewal thread running.
    with get_client(sync_client=True) as client, ExitStack() as stack:
        if full := _ensure_limits(client, names):
            logger.info(_waiting(client, names, full))
        start = time.monotonic()
        while True:
            try:  # the lease is renewed while held and expires 300 s after a holder is killed
                stack.enter_context(concurrency(names, occupy=1, timeout_seconds=REPORT_EVERY_S, strict=True,
                                                holder=holder, raise_on_lease_renewal_failure=False))
                break
            except TimeoutError:
                logger.info("still " + _waiting(client, names, names))
        held = Held(list(names), waited_s=time.monotonic() - start)
        if flow_run_id:
            stack.callback(_tag, client, flow_run_id, names, held=False)
        logger.info("holding %s%s", ", ".join(names), f" after waiting {held.waited_s:.0f}s" if full else "")
        if flow_run_id:
            _tag(client, flow_run_id, names, held=True)
        yield held
