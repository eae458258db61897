"""Flow state hooks: stop what a cancelled or crashed run left behind; and who owns what a run starts.

These may run in the worker rather than the flow's process, so they find servers and benchmark
tools through the janitor's records (by flow run id), not through objects in memory, and
containers (one-shot builds included) by their flow-run label.
"""
from __future__ import annotations

from uuid import UUID

from prefect import runtime

from specops.host import tracking
from specops.pipeline import janitor


def _flow_run_id() -> str | None:
    return str(runtime.flow_run.id or "") or None


# Every process specops.host.tracking records while a flow runs belongs to that flow run.
tracking.set_owner_lookup(_flow_run_id)


def reap_servers(flow, flow_run, state) -> None:
    stopped = janitor.sweep(owner=str(flow_run.id))
    if containers := janitor.remove_containers(str(flow_run.id)):
        stopped["container"] += containers
    what, removed = janitor.stopped_parts(stopped)
    print(f"{flow.name} {state.name}: stopped {what} left by flow run {flow_run.id}{removed}")


class ApiUnavailable(RuntimeError):
    """No Prefect API to ask (none configured, or it does not answer)."""


def flow_runs_alive(ids: set[str], timeout_s: float = 10.0) -> dict[str, bool]:
    """Of these owners, the flow runs the configured Prefect API knows, each with whether it is still
    running (not in a final state). Owners it does not know (not flow run ids, another server's
    runs) are left out: the caller decides about them some other way."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId
    from prefect.settings import get_current_settings

    url = get_current_settings().api.url
    if not url:  # Prefect would start an ephemeral server, which knows no run
        raise ApiUnavailable("no Prefect API configured (PREFECT_API_URL is unset)")
    uuids = []
    for owner in ids:
        try:
            uuids.append(UUID(owner))
        except ValueError:
            pass
    with get_client(sync_client=True, httpx_settings={"timeout": timeout_s}) as client:
        if (error := client.api_healthcheck()) is not None:
            raise ApiUnavailable(f"the Prefect API at {url} does not answer ({type(error).__name__}: {error})")
        runs = client.read_flow_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=uuids))) if uuids else []
    return {str(r.id): not (r.state is not None and r.state.is_final()) for r in runs}
