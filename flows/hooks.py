"""Flow state hooks: stop what a cancelled or crashed run left behind; and who owns what a run starts.

These may run in the worker rather than the flow's process, so they find servers and benchmark
tools through the janitor's records (by flow run id), not through objects in memory.
"""
from __future__ import annotations

from prefect import runtime

from specops import janitor, tracking


def _flow_run_id() -> str | None:
    return str(runtime.flow_run.id or "") or None


# Every process specops.tracking records while a flow runs belongs to that flow run.
tracking.set_owner_lookup(_flow_run_id)


def reap_servers(flow, flow_run, state) -> None:
    stopped = janitor.sweep(owner=str(flow_run.id))
    what = ", ".join(f"{n} {kind}" for kind, n in sorted(stopped.items())) or "nothing"
    print(f"{flow.name} {state.name}: stopped {what} left by flow run {flow_run.id}")
