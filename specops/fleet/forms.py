"""A deployment's form as its pool can serve it: the profile choices narrowed to the profiles that pool's workers
run, and each override checked, where the server checks parameters, against the profile schema's keys, value types
and bounds, each refusal in people's words (specops/fleet/override_rules.py).

Prefect builds one parameter schema per flow (prefect/cli/deploy/_core.py: `parameter_schema(flow)`, whatever
prefect.yaml says), so every deployment of `specdec` offered all profiles and any string as an override: a GPU
profile picked on the CPU pool's deployment ran, and `num_requests 4` failed 25 s later on the worker. The server
checks a run's parameters against its deployment's stored schema when the run is created
(enforce_parameter_schema; prefect/server/api/deployments.py answers 409), and a deployment's schema can be
updated (DeploymentUpdate.parameter_openapi_schema): `specops deployments --narrow-forms` writes these after
`prefect deploy`. Prefect-free: schema in, schema out.
"""
from __future__ import annotations

import copy
from typing import Any

from specops.fleet.override_rules import override_item_schema
from specops.fleet.profile_rules import profile_item_rules

# The flows that run their profile with the overrides as they are (calibrate swaps in the A/A method, upgrade each
# side's engine, so what the profile alone refuses is not theirs to refuse)
RUN_AS_IS = frozenset({"specdec", "sweep", "train-draft"})


def narrowed(schema: dict[str, Any], choices: list[str], shipped: list[str], own: str | None = None) -> dict[str, Any]:
    """The flow's parameter schema for a deployment on a pool whose workers run `choices`: its profile (or
    profiles) one of them, each override a key of the profile schema with a value of its type and bounds, and, while
    the profile is the deployment's own (`own`), what that profile refuses of one override
    (specops/fleet/profile_rules.py). A regression suite's entries keep every shipped profile (a GPU one runs
    through its own deployment)."""
    out = copy.deepcopy(schema)
    if own is not None and {"profile", "overrides"} <= set(out.get("properties", {})):
        out.setdefault("allOf", []).append({
            "if": {"properties": {"profile": {"const": own}}, "required": ["profile"]},
            "then": {"properties": {"overrides": {"items": {"allOf": list(profile_item_rules(own))}}}}})
    item = override_item_schema()
    for props, names in [(out.get("properties", {}), choices),
                         *[(d.get("properties", {}), shipped) for d in out.get("definitions", {}).values()]]:
        if "profile" in props:
            props["profile"]["enum"] = list(names)
        if "profiles" in props:
            props["profiles"].setdefault("items", {})["enum"] = list(names)
        if "overrides" in props:
            props["overrides"]["items"] = {**props["overrides"].get("items", {}), **item}
    return out
