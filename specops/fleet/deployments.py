"""The deployments of prefect.yaml (specops/fleet/prefect_yaml.py writes the file), built from the profiles.

Every profile gets a `specdec` deployment named after it, and a `train-draft` one when it trains its
draft; its pool follows from its backend (the registry's `needs_gpu`), its description and tags from
the profile. Prefect-free: these are the dicts that `prefect deploy` reads.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from specops.backends import needs_gpu
from specops.methods import swept_methods
from specops.profile.schema import Profile
from specops.regression.suite import EVENT, RESOURCE_PREFIX
from specops.settings import env_name
from specops.upgrade.defaults import default_sides

CPU_POOL, GPU_POOL = "specops-cpu", "specops-gpu"
SPECDEC, TRAIN_DRAFT = "flows/specdec.py:specdec", "flows/train_draft.py:train_draft"
REGRESSION, ALERT = "flows/regression.py:regression", "flows/alert.py:regression_alert"
CALIBRATE = "flows/calibrate.py:calibrate"
SWEEP, COMPARE = "flows/sweep.py:sweep", "flows/compare.py:compare"
UPGRADE = "flows/upgrade.py:upgrade"
NO_WORKER = "flows/no_worker.py:no_worker_alert"
# Nightly, in UTC so that workers in several time zones agree (prefect/cli/deploy/_schedules.py:
# `cron` + `timezone` make a CronSchedule).
NIGHTLY = {"cron": "0 2 * * *", "timezone": "UTC", "active": True}
# The block the alert flow notifies through by default; an operator points the deployment's
# `block` parameter at another (any Webhook or notification block).
ALERT_BLOCK = "webhook/specops-regression"
# The event a Late run on a pool with no live worker raises (flows/no_worker.py), resource specops.pool.<pool>.
NO_WORKER_EVENT = "specops.pool.no-worker"
# One benchmark per GPU: a second run of a GPU deployment waits for the first (ENQUEUE), never
# cancelled (CANCEL_NEW). Prefect 3.8.8: ConcurrencyLimitConfig in client/schemas/objects.py.
GPU_CONCURRENCY = {"limit": 1, "collision_strategy": "ENQUEUE"}
# The Secret block that holds the Hugging Face token of the GPU pool's workers.
HF_TOKEN_BLOCK = "hf-token"
# Where a flow run keeps its files and cache on the worker, and its results database: the deployer's
# environment names them at `prefect deploy` time ({{ $VAR }}). Unset, `prefect deploy` would store ""
# and the worker would put that over its host's own setting, so the build step (tools/deploy_source.py,
# which reads this literal from the source: keep it one) refuses to deploy while any is unset or empty;
# but the artifacts URL, optional: without an artifacts server the runs link their files as file://.
WORKER_ENV = {
    "SPECOPS_CACHE": "SPECOPS_WORKER_CACHE",
    "SPECOPS_ARTIFACTS": "SPECOPS_WORKER_ARTIFACTS",
    "SPECOPS_RESULTS_URL": "SPECOPS_WORKER_RESULTS_URL",
    "SPECOPS_ARTIFACTS_URL": "SPECOPS_WORKER_ARTIFACTS_URL",  # optional: "" means file:// links
}
# The profile each pool's sweep deployment starts with (the form's `profile` takes any other). `prefect deploy`,
# and so `make up`, pays for each deployment (it loads the flow, parses prefect.yaml and runs the build steps):
# 1.3 s here on an idle 2-core host, 4 s under a test run's load (95 s for one sweep per profile). One sweep and
# one compare deployment per pool, not one per profile.
SWEEP_PROFILES = {CPU_POOL: "ngram-local", GPU_POOL: "ngram-vllm"}


def pool_of(profile: Profile) -> str:
    return GPU_POOL if needs_gpu(profile.backend) else CPU_POOL


def pool_env(pool: str) -> dict[str, str]:
    """Environment the pool's base job template adds: resolved by the worker when it starts a run
    (prefect/workers/base.py BaseJobConfiguration.from_template_and_values), so the token is in no
    deployment record; a `{{ prefect.blocks... }}` in a deployment's job variables would be resolved
    by `prefect deploy` and stored in plain text (prefect/cli/deploy/_core.py _run_single_deploy)."""
    return {env_name("hf_token"): f"{{{{ prefect.blocks.secret.{HF_TOKEN_BLOCK} }}}}"} if pool == GPU_POOL else {}


def work_pool(pool: str) -> dict[str, Any]:
    env = {name: f"{{{{ ${deploy_var} }}}}" for name, deploy_var in WORKER_ENV.items()}
    return {"name": pool, "job_variables": {"env": env}}


def on_pool(pool: str, name: str, description: str, entrypoint: str, parameters: dict[str, Any], tags: list[str],
            **more: Any) -> dict[str, Any]:
    """A deployment on `pool` (a GPU pool's runs one at a time); `more` adds schedules or triggers."""
    spec = {"name": name, "description": description, "entrypoint": entrypoint, "parameters": parameters,
            "work_pool": work_pool(pool), "tags": tags, **more}
    if pool == GPU_POOL:
        spec["concurrency_limit"] = dict(GPU_CONCURRENCY)
    return spec


def deployment(profile: Profile, entrypoint: str, tags: list[str]) -> dict[str, Any]:
    return on_pool(pool_of(profile), profile.name, profile.description, entrypoint, {"profile": profile.name}, tags)


def specdec_deployments(profiles: list[Profile]) -> list[dict[str, Any]]:
    return [deployment(p, SPECDEC, ["specops", p.method.kind, p.backend.kind]) for p in profiles]


def train_draft_deployments(profiles: list[Profile]) -> list[dict[str, Any]]:
    return [deployment(p, TRAIN_DRAFT, ["specops", "train-draft", p.method.kind]) for p in profiles
            if p.draft is not None and p.draft.train is not None]


def _per_pool(profiles: list[Profile], entrypoint: str, tag: str, offered: Callable[[Profile], bool],
              what: str) -> list[dict[str, Any]]:
    """A deployment per pool, of its SWEEP_PROFILES profile: described by `what` and the pool's `offered` profiles."""
    by_name = {p.name: p for p in profiles}
    out = []
    for pool, name in SWEEP_PROFILES.items():
        spec = deployment(by_name[name], entrypoint, ["specops", tag])
        choices = [p.name for p in profiles if pool_of(p) == pool and offered(p)]
        spec["description"] = f"{what.format(pool=pool)} Profiles this pool runs: {', '.join(choices)}"
        out.append(spec)
    return out


def calibrate_deployments(profiles: list[Profile]) -> list[dict[str, Any]]:
    """`calibrate/<profile>` for one profile of each pool (SWEEP_PROFILES), unscheduled (20 runs are long: an
    operator schedules it, e.g. weekly, or after a host or image change); the form's `profile` takes any other
    with a baseline that the pool runs (the description lists them). One per pool, not per profile: `prefect
    deploy` pays seconds per deployment, and the form's choice already offers every profile."""
    return _per_pool(profiles, CALIBRATE, "calibrate", lambda p: p.comparison.baseline,
                     "A profile's base against itself, `runs` times, on {pool}: how often the 95% interval contains "
                     "1.00x and how far false speedups stray.")


def sweep_deployments(profiles: list[Profile]) -> list[dict[str, Any]]:
    """`sweep/<profile>` for one profile of each pool (SWEEP_PROFILES), unscheduled: the form's `profile`
    takes any other that the pool runs (the description lists them), its grid, overrides and run id are
    the form's too (flows/sweep.py)."""
    return _per_pool(profiles, SWEEP, "sweep", lambda p: p.method.kind in swept_methods(),
                     "A profile over draft length K x concurrency on {pool}, each cell measured beside the base's "
                     "server (both up at once: a GPU profile needs benchmark.interleave=true and room for both): "
                     "where speculation stops paying, and the K per load where its 95% interval says so.")


def comparable_sets(profiles: list[Profile]) -> dict[str, list[Profile]]:
    """The shipped profiles that serve one target model on one backend (so one pool), two or more, by
    `<model>-<backend>`: what a comparison of methods puts side by side; the sets of most methods first."""
    groups: dict[tuple[str, str], list[Profile]] = {}
    for p in profiles:
        groups.setdefault((p.target.source, p.backend.kind), []).append(p)
    out: dict[str, list[Profile]] = {}
    ranked = sorted(groups.items(), key=lambda g: (-len({m.method.kind for m in g[1]}), -len(g[1]), g[0]))
    for (source, backend), members in ranked:
        name = f"{source.rsplit('/', 1)[-1].rsplit(':', 1)[-1]}-{backend}"  # hf://org/<model>, embedded:<model>
        if len(members) < 2 or len({pool_of(m) for m in members}) > 1:
            continue
        if name in out:
            raise ValueError(f"two sets of comparable profiles would be named {name} (one is of {source}): name "
                             "them by more of the target's source (specops/fleet/deployments.py comparable_sets)")
        out[name] = members
    return out


def compare_deployments(profiles: list[Profile]) -> list[dict[str, Any]]:
    """`compare/<model>-<backend>`: on each pool, its first comparable set (comparable_sets) side by side,
    unscheduled; the form's `profiles` takes any others of one target (the description lists this pool's
    sets; flows/compare.py refuses two targets, specops/profile/loader.py check_comparable)."""
    out = []
    for pool in (CPU_POOL, GPU_POOL):
        sets = {name: members for name, members in comparable_sets(profiles).items() if pool_of(members[0]) == pool}
        if not sets:
            continue
        name, members = next(iter(sets.items()))
        listed = "; ".join(", ".join(m.name for m in ms) for ms in sets.values())
        out.append(on_pool(pool, name, f"{', '.join(m.name for m in members)} ({members[0].target.source} on "
                           f"{members[0].backend.kind}), one after another, each against the base measured in its "
                           f"own run, in one table. Sets of one target on {pool}: {listed}",
                           COMPARE, {"profiles": [m.name for m in members]}, ["specops", "compare"]))
    return out


def _reactive(name: str, description: str, match: dict[str, str], event: str, parameters: dict[str, str],
              **more: Any) -> dict[str, Any]:
    """An automation trigger that runs its deployment once per `event` on a resource `match` takes."""
    return {"name": name, "description": description, "enabled": True, "match": match, **more, "expect": [event],
            "posture": "Reactive", "threshold": 1, "within": 0, "parameters": parameters}


def regression_deployments(profiles: list[Profile]) -> list[dict[str, Any]]:
    """`regression/nightly` on a cron schedule over the CPU pool's profiles (a GPU profile joins the
    suite through the deployment's parameter and runs on its own pool), and `regression-alert/notify`,
    whose trigger is the automation that turns each regression event into a notification."""
    suite = [{"profile": p.name} for p in profiles if pool_of(p) == CPU_POOL]
    nightly = on_pool(CPU_POOL, "nightly",
                      "Every CPU-pool profile once; each metric judged against its history; Failed on a regression",
                      REGRESSION, {"suite": suite}, ["specops", "regression"], schedules=[dict(NIGHTLY)])
    # Its parameters are rendered by the server when the event arrives (prefect/server/events/actions.py
    # RunDeployment: a lone `{{ ... }}` keeps its JSON type), not by `prefect deploy`.
    trigger = _reactive("specops-regression-detected",
                        f"Each {EVENT} event runs regression-alert/notify with the event's payload",
                        {"prefect.resource.id": f"{RESOURCE_PREFIX}*"}, EVENT, {"payload": "{{ event.payload }}"})
    alert = on_pool(CPU_POOL, "notify",
                    f"Sends each regression to the {ALERT_BLOCK} block (a Webhook or notification block)",
                    ALERT, {"block": ALERT_BLOCK}, ["specops", "regression"], triggers=[trigger])
    return [nightly, alert]


def no_worker_deployments(profiles: list[Profile]) -> list[dict[str, Any]]:
    """`no-worker-alert/notify`: its trigger is the automation that sees each specops run go Late; the flow
    (on the CPU pool, whose worker `make up` starts) says so, in an event and an alert, only when no live
    worker serves the run's pool. The trigger matches runs tagged `specops` and this deployment's tags lack
    it: its own run, Late on a CPU pool without worker, starts no other (which would be Late in turn)."""
    trigger = _reactive("specops-run-late", "Each specops flow run that goes Late runs no-worker-alert/notify, "
                        "which alerts when no live worker serves its pool",
                        {"prefect.resource.id": "prefect.flow-run.*"}, "prefect.flow-run.Late",
                        {"flow_run_id": "{{ event.resource.id }}"},  # prefect.flow-run.<id>, rendered by the server
                        match_related={"prefect.resource.role": "tag", "prefect.resource.id": "prefect.tag.specops"})
    return [on_pool(CPU_POOL, "notify",
                    f"A Late specops run on a pool with no live worker: the event {NO_WORKER_EVENT} and an alert "
                    f"through the {ALERT_BLOCK} block, naming the pool, the run and the worker command",
                    NO_WORKER, {"block": ALERT_BLOCK}, ["specops-ops", "no-worker"], triggers=[trigger])]


def upgrade_deployments(profiles: list[Profile]) -> list[dict[str, Any]]:
    """`upgrade/<profile>`: the profile on two engine versions, side by side, on its own pool, unscheduled (an
    operator runs it when an image or engine bump is proposed); its default sides come from the version data
    (specops/upgrade/defaults.py), a profile with no older engine to set beside it gets none."""
    out = []
    for p in profiles:
        sides = default_sides(p)
        if sides is None:
            continue
        spec = deployment(p, UPGRADE, ["specops", "upgrade", p.backend.kind])
        before, after = sides
        spec["description"] = (f"{p.name} on two engines side by side: before {' '.join(before)}, after "
                               f"{' '.join(after) or 'the profile as shipped'} (set before/after to backend "
                               "overrides of your own)")
        spec["parameters"] |= {"before": before, "after": after}
        out.append(spec)
    return out


# Every flow's deployments, from the shipped profiles, in prefect.yaml's order: a new flow adds its builder here
# (CONTRIBUTING.md, "A flow"), so that `specops deployments` writes them.
FLOW_DEPLOYMENTS: tuple[Callable[[list[Profile]], list[dict[str, Any]]], ...] = (
    specdec_deployments, train_draft_deployments, calibrate_deployments, sweep_deployments, compare_deployments,
    regression_deployments,
    no_worker_deployments, upgrade_deployments)


def dispatched(profile: Profile) -> str | None:
    """The deployment another flow runs this profile through (`run_deployment`), so that it reaches a
    worker on its pool; None when it runs in the calling flow's process (the CPU pool's profiles)."""
    return f"specdec/{profile.name}" if pool_of(profile) == GPU_POOL else None
