"""A run's role is what its parent flow gives it, through a real subflow call (a test harness server), and no field
of the specdec form (issue 51: the form showed it as a raw JSON editor)."""
from __future__ import annotations

from prefect import flow

from flows.specdec import specdec
from prefect_adapters.run_role import given_role, in_role
from specops.results.role import COMPARE, OWN, RunRole


def test_a_parent_flows_role_reaches_its_subflow_and_no_other_run(harness):
    @flow
    def member() -> RunRole:
        return given_role()

    @flow
    def parent() -> tuple[RunRole, RunRole]:
        with in_role(RunRole(kind=COMPARE, of="cmp-1")):
            inside = member()
        return inside, member()

    inside, after = parent()
    assert inside == RunRole(kind=COMPARE, of="cmp-1") and after.kind == OWN
    assert member().kind == OWN  # a run started by hand (a deployment's run, `specops run`) is a run of its own


def test_the_specdec_form_has_no_role():
    """What `prefect deploy` stores as the deployment's parameter schema: what a person may set, nothing more."""
    assert sorted(specdec.parameters.model_dump_for_openapi()["properties"]) == ["overrides", "profile", "run_id"]
