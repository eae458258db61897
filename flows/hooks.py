"""Flow state hooks: stop servers a cancelled or crashed run left behind.

These may run in the worker rather than the flow's process, so they find servers through the
janitor's records (by flow run id), not through objects in memory.
"""
from __future__ import annotations

from specops import janitor


def reap_servers(flow, flow_run, state) -> None:
    stopped = janitor.reap(owner=str(flow_run.id))
    print(f"specdec {state.name}: stopped {stopped} leftover server(s) of flow run {flow_run.id}")
