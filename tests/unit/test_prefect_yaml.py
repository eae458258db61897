"""prefect.yaml is what `specops deployments` generates from the profiles, and what it generates is right."""
from __future__ import annotations

import uuid
from pathlib import Path

import yaml

from specops.backends import needs_gpu
from specops.fleet.deployments import CPU_POOL, GPU_POOL, HF_TOKEN_BLOCK, pool_env, pool_of
from specops.fleet.prefect_yaml import COMMAND, render
from specops.profile.loader import list_profile_names, load_profile

ROOT = Path(__file__).resolve().parents[2]


def test_checked_in_prefect_yaml_is_current():
    assert (ROOT / "prefect.yaml").read_text() == render(), f"prefect.yaml is stale: run `{COMMAND}`"


def _deployments(entrypoint: str) -> dict[str, dict]:
    doc = yaml.safe_load(render())
    return {d["name"]: d for d in doc["deployments"] if d["entrypoint"] == entrypoint}


def test_one_specdec_deployment_per_profile_on_the_pool_its_backend_needs():
    deployments = _deployments("flows/specdec.py:specdec")
    assert sorted(deployments) == list_profile_names()
    for name, d in deployments.items():
        profile = load_profile(name).profile
        gpu = needs_gpu(profile.backend)
        assert d["parameters"] == {"profile": name}
        assert d["description"] == profile.description
        assert d["tags"] == ["specops", profile.method.kind, profile.backend.kind]
        assert d["work_pool"]["name"] == (GPU_POOL if gpu else CPU_POOL)


def test_every_gpu_deployment_has_its_pool_limit_and_job_variables():
    gpu = [d for d in yaml.safe_load(render())["deployments"] if d["work_pool"]["name"] == GPU_POOL]
    assert gpu
    for d in gpu:
        assert d["concurrency_limit"] == {"limit": 1, "collision_strategy": "ENQUEUE"}, d["name"]
        assert set(d["work_pool"]["job_variables"]["env"]) == {"SPECOPS_CACHE", "SPECOPS_ARTIFACTS",
                                                               "SPECOPS_RESULTS_URL", "SPECOPS_ARTIFACTS_URL"}
    cpu = [d for d in yaml.safe_load(render())["deployments"] if d["work_pool"]["name"] == CPU_POOL]
    assert cpu and all("concurrency_limit" not in d for d in cpu)


def test_the_token_is_no_deployment_variable_but_the_gpu_pools_default():
    assert "prefect.blocks" not in render()  # `prefect deploy` would store it resolved, in plain text
    assert pool_env(GPU_POOL) == {"HF_TOKEN": f"{{{{ prefect.blocks.secret.{HF_TOKEN_BLOCK} }}}}"}
    assert pool_env(CPU_POOL) == {}


def test_pull_steps_clone_the_pinned_commit_then_check_the_environment():
    doc = yaml.safe_load(render())
    clone, install = doc["pull"]
    assert clone["prefect.deployments.steps.git_clone"]["commit_sha"] == "{{ deployed-commit.stdout }}"
    assert clone["prefect.deployments.steps.git_clone"]["repository"] == "{{ deployed-repository.stdout }}"
    step = install["prefect.deployments.steps.run_shell_script"]
    assert step["directory"] == "{{ clone.directory }}" and step["script"] == "python3 tools/worker_env.py"
    assert (ROOT / "tools" / "worker_env.py").is_file() and (ROOT / "tools" / "deploy_source.py").is_file()
    ids = [next(iter(s.values()))["id"] for s in doc["build"]]
    assert ids == ["deployed-commit", "deployed-repository"]


def test_one_train_draft_deployment_per_trainable_profile():
    deployments = _deployments("flows/train_draft.py:train_draft")
    trainable = [n for n in list_profile_names()
                 if (p := load_profile(n).profile).draft is not None and p.draft.train is not None]
    assert trainable and sorted(deployments) == trainable
    for name, d in deployments.items():
        assert d["parameters"]["profile"] == name
        # training runs where the profile's backend runs: a GPU seed profile trains on the GPU pool
        assert d["work_pool"]["name"] == pool_of(load_profile(name).profile)
    assert deployments["medusa-trtllm-engine-seed"]["work_pool"]["name"] == GPU_POOL
    assert deployments["medusa-local"]["work_pool"]["name"] == CPU_POOL


def test_flows_are_named_for_the_deployments():
    from flows.specdec import specdec
    from flows.train_draft import train_draft

    assert specdec.name == "specdec" and train_draft.name == "train-draft"


def test_pool_template_is_prefects_process_template_with_the_token_default():
    from prefect.workers.process import ProcessWorker

    from cli.deployments import pool_template

    default = ProcessWorker.get_default_base_job_template()
    gpu = pool_template(GPU_POOL)
    assert gpu["job_configuration"] == default["job_configuration"]
    assert gpu["variables"]["properties"]["env"]["default"] == pool_env(GPU_POOL)
    assert pool_template(CPU_POOL)["variables"]["properties"]["env"]["default"] == {}


def test_prefect_reads_the_file_as_written():
    """Prefect 3.8.8's own model of prefect.yaml (the one `prefect deploy` validates with) takes every key."""
    from prefect.cli.deploy._models import PrefectYamlModel
    from prefect.client.schemas.objects import ConcurrencyLimitConfig

    doc = yaml.safe_load(render())
    model = PrefectYamlModel.model_validate(doc)
    assert len(model.deployments) == len(doc["deployments"])
    for d in doc["deployments"]:
        if "concurrency_limit" in d:
            assert ConcurrencyLimitConfig.model_validate(d["concurrency_limit"]).collision_strategy.value == "ENQUEUE"


def test_the_nightly_regression_runs_the_cpu_pools_profiles_on_a_cron_schedule():
    from prefect.cli.deploy._schedules import _schedule_config_to_deployment_schedule

    doc = yaml.safe_load(render())
    nightly = next(d for d in doc["deployments"] if d["entrypoint"] == "flows/regression.py:regression")
    cpu = [name for name in list_profile_names() if not needs_gpu(load_profile(name).profile.backend)]
    assert nightly["parameters"]["suite"] == [{"profile": name} for name in cpu] and cpu
    assert nightly["work_pool"]["name"] == CPU_POOL
    schedule = _schedule_config_to_deployment_schedule(nightly["schedules"][0])["schedule"]
    assert (schedule.cron, schedule.timezone) == ("0 2 * * *", "UTC")


def test_the_automation_runs_the_alert_deployment_for_each_regression_event():
    """What `prefect deploy` turns the trigger into (prefect/cli/deploy/_triggers.py), built here as it would."""
    from prefect.cli.deploy._triggers import _initialize_deployment_triggers

    from flows.alert import regression_alert
    from specops.regression.suite import EVENT, resource_id

    doc = yaml.safe_load(render())
    alert = next(d for d in doc["deployments"] if d["entrypoint"] == "flows/alert.py:regression_alert")
    (trigger,) = _initialize_deployment_triggers("regression-alert/notify", alert["triggers"])
    trigger.set_deployment_id(uuid.uuid4())  # the server's id of the deployment, once deployed
    automation = trigger.as_automation()
    assert [a.type for a in automation.actions] == ["run-deployment"]
    assert automation.trigger.expect == {EVENT} and automation.trigger.posture.value == "Reactive"
    from prefect.events.schemas.events import Resource

    assert automation.trigger.match.matches(Resource({"prefect.resource.id": resource_id("ngram-local")}))
    assert not automation.trigger.match.matches(Resource({"prefect.resource.id": "prefect.flow-run.x"}))
    assert trigger.parameters == {"payload": "{{ event.payload }}"}
    # the parameters the trigger and the deployment give are the flow's own
    assert set(trigger.parameters) | set(alert["parameters"]) == set(regression_alert.parameters.properties)


def test_one_sweep_deployment_per_pool_whose_description_lists_the_pools_profiles():
    from specops.fleet.deployments import SWEEP_PROFILES
    from specops.methods import swept_methods

    deployments = _deployments("flows/sweep.py:sweep")
    assert sorted(deployments) == sorted(SWEEP_PROFILES.values())
    for pool, name in SWEEP_PROFILES.items():
        d = deployments[name]
        assert d["parameters"] == {"profile": name} and d["work_pool"]["name"] == pool
        assert pool_of(load_profile(name).profile) == pool and d["tags"] == ["specops", "sweep"]
        assert ("concurrency_limit" in d) == (pool == GPU_POOL)
        listed = d["description"].rsplit(": ", 1)[1].split(", ")
        assert listed == [n for n in list_profile_names() if pool_of(p := load_profile(n).profile) == pool
                          and p.method.kind in swept_methods()]


def test_compare_deployments_put_one_targets_profiles_of_one_backend_side_by_side():
    from specops.fleet.deployments import comparable_sets
    from specops.profile.loader import check_comparable

    profiles = [load_profile(n).profile for n in list_profile_names()]
    sets = comparable_sets(profiles)
    # every shipped profile that shares its target and backend with another is in one set
    by_group: dict = {}
    for p in profiles:
        by_group.setdefault((p.target.source, p.backend.kind), []).append(p.name)
    assert {m.name for ms in sets.values() for m in ms} == {n for ns in by_group.values() if len(ns) > 1 for n in ns}
    for members in sets.values():
        check_comparable([load_profile(m.name) for m in members])  # what the flow checks first
    deployments = _deployments("flows/compare.py:compare")
    assert sorted(deployments) == ["smollm2-135m-local", "vicuna-7b-v1.3-trtllm-engine"]
    assert deployments["smollm2-135m-local"]["parameters"]["profiles"] == [
        "draft-target-local", "eagle-local", "eagle3-local", "medusa-local", "ngram-local"]  # any CPU worker runs them
    for name, d in deployments.items():
        members = sets[name]
        assert d["parameters"]["profiles"] == [m.name for m in members]
        assert {pool_of(m) for m in members} == {d["work_pool"]["name"]}
        assert ("concurrency_limit" in d) == (d["work_pool"]["name"] == GPU_POOL)
        # the description lists every set of its pool, for the form's `profiles`
        assert all(", ".join(m.name for m in ms) in d["description"] for ms in sets.values()
                   if pool_of(ms[0]) == d["work_pool"]["name"])


def test_each_deployments_parameters_pass_its_flows_form():
    """What the server checks at `prefect deploy` and on each run (enforce_parameter_schema)."""
    from prefect.utilities.schema_tools import validate

    from flows.calibrate import calibrate
    from flows.compare import compare
    from flows.specdec import specdec
    from flows.sweep import sweep
    from flows.train_draft import train_draft
    from flows.upgrade import upgrade

    flows = {f"flows/{f.fn.__module__.rsplit('.', 1)[-1]}.py:{f.fn.__name__}": f
             for f in (specdec, train_draft, sweep, compare, calibrate, upgrade)}
    checked: set[str] = set()
    for d in yaml.safe_load(render())["deployments"]:
        if d["entrypoint"] in flows:
            validate(d["parameters"], flows[d["entrypoint"]].parameters.model_dump_for_openapi(), raise_on_error=True)
            checked.add(d["entrypoint"])
    assert checked == set(flows)  # every flow's deployments were checked
