"""Each specops deployment's form narrowed to what its pool's workers run (specops/fleet/forms.py), on the
configured Prefect server: `specops deployments --narrow-forms`, which `make up` and `make deploy` run after
`prefect deploy` (which stores every deployment of a flow with the flow's one schema)."""
from __future__ import annotations

import asyncio

from specops.fleet.deployments import CPU_POOL, GPU_POOL, pool_of
from specops.fleet.forms import RUN_AS_IS, narrowed
from specops.profile.loader import list_profile_names, load_profile


def pool_choices() -> dict[str, list[str]]:
    """pool -> the shipped profiles its workers run."""
    out: dict[str, list[str]] = {CPU_POOL: [], GPU_POOL: []}
    for name in list_profile_names():
        out[pool_of(load_profile(name).profile)].append(name)
    return out


async def _narrow_all() -> list[str]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import DeploymentUpdate

    choices, shipped, done = pool_choices(), list_profile_names(), []
    async with get_client() as client:
        flows = {f.id: f.name for f in await client.read_flows()}
        for d in await client.read_deployments():
            if d.work_pool_name not in choices or not d.parameter_openapi_schema:
                continue
            flow, own = flows.get(d.flow_id, d.flow_id), (d.parameters or {}).get("profile")
            # its profile's cross-field rules, while the form keeps that profile, where the flow runs it as it is
            schema = narrowed(d.parameter_openapi_schema, choices[d.work_pool_name], shipped,
                              own if own in shipped and flow in RUN_AS_IS else None)
            if schema != d.parameter_openapi_schema:
                await client.update_deployment(d.id, DeploymentUpdate(parameter_openapi_schema=schema))
                done.append(f"{flow}/{d.name}")
    return done


def narrow_forms() -> list[str]:
    """The deployments whose stored form changed, as flow/deployment."""
    return asyncio.run(_narrow_all())
