"""tools/deploy_output.py: `prefect deploy`'s worker hint, printed after every deployment of a pool with no
worker online, dropped; everything else kept, the pools without a worker named once at the end."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
# As Prefect 3.9.1 printed two deployments (prefect/cli/deploy/_core.py), through a pipe (80 columns).
DEPLOYED = """\
Deploying flows with selected deployment configurations...
Running deployment build steps...
 > Running run_shell_script step...
╭──────────────────────────────────────────────────────────────────────────────╮
│ Deployment 'specdec/ngram-local' successfully created with id                │
│ 'dd1e6986-bf57-40e9-acb7-c71431cdaefc'.                                      │
╰──────────────────────────────────────────────────────────────────────────────╯

View Deployment in UI: http://127.0.0.1:45315/deployments/deployment/dd1e6986

{hint_cpu}
To schedule a run for this deployment, use the following command:

        $ prefect deployment run 'specdec/ngram-local'

Error: deploying specdec/eagle3-trtllm failed
{hint_gpu}
To schedule a run for this deployment, use the following command:

        $ prefect deployment run 'specdec/eagle3-trtllm'

"""
# Prefect's line ends in a space where rich wraps it.
HINT = """
To execute flow runs from these deployments, start a worker in a separate\x20
terminal that pulls work from the '{pool}' work pool:

        $ prefect worker start --pool '{pool}'
"""


def filtered(text: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "tools" / "deploy_output.py"), *args], input=text,
                          capture_output=True, text=True, timeout=60, check=True)


def test_the_worker_hints_go_everything_else_stays():
    text = DEPLOYED.format(hint_cpu=HINT.format(pool="specops-cpu"), hint_gpu=HINT.format(pool="specops-gpu"))
    out = filtered(text).stdout
    assert "start a worker" not in out and "$ prefect worker start" not in out
    assert out == DEPLOYED.format(hint_cpu="\n", hint_gpu="\n") + (  # the blank line before each hint stays
        "no worker was online for 'specops-cpu', 'specops-gpu' when deployed: runs there wait for one "
        "(`prefect worker start --pool <pool> --type process` on a host the pool's runs need)\n")
    assert "Error: deploying specdec/eagle3-trtllm failed" in out


def test_the_pool_make_up_starts_a_worker_on_is_not_named():
    text = DEPLOYED.format(hint_cpu=HINT.format(pool="specops-cpu"), hint_gpu="")
    out = filtered(text, "--worker-follows", "specops-cpu").stdout
    assert out == DEPLOYED.format(hint_cpu="\n", hint_gpu="")


def test_with_a_log_stdout_has_one_line_per_flow_and_the_log_has_everything(tmp_path):
    config = tmp_path / "prefect.yaml"
    config.write_text("deployments:\n"
                      "- {name: ngram-local, entrypoint: 'flows/specdec.py:specdec', work_pool: {name: specops-cpu}}\n"
                      "- {name: eagle3-trtllm, entrypoint: 'flows/specdec.py:specdec', work_pool: {name: specops-gpu}}\n"
                      "- {name: ngram-local, entrypoint: 'flows/sweep.py:sweep', work_pool: {name: specops-gpu}}\n")
    # a long name that rich wraps onto the panel's next line, and a second flow
    wrapped = ("╭────╮\n│ Deployment                     │\n│ 'specdec/eagle3-trtllm' successfully created with id │\n"
               "│ 'ab'. │\n╰────╯\n╭────╮\n│ Deployment 'sweep/ngram-local' successfully created │\n╰────╯\n")
    text = DEPLOYED.format(hint_cpu=HINT.format(pool="specops-cpu"), hint_gpu=HINT.format(pool="specops-gpu")) + wrapped
    log = tmp_path / "deploy.log"
    out = filtered(text, "--worker-follows", "specops-cpu", "--log", str(log), "--config", str(config)).stdout
    assert log.read_text() == text
    assert out.splitlines() == [
        "Error: deploying specdec/eagle3-trtllm failed",
        f"deployed 3 deployments (`prefect deploy` output: {log}):",
        "  specdec: 2 deployments (specops-cpu 1, specops-gpu 1); no worker on specops-gpu",
        "  sweep: 1 deployment (specops-gpu 1); no worker on specops-gpu",
        "no worker was online for 'specops-gpu' when deployed: runs there wait for one "
        "(`prefect worker start --pool <pool> --type process` on a host the pool's runs need)"]


def test_make_up_says_what_is_scheduled_when_and_how_to_start_it_now(tmp_path):
    # the issue: `make up` did not say that regression/nightly is scheduled (the CPU profiles, 02:00 UTC), nor how
    # to start a run from the shell. The schedule is read from the real prefect.yaml.
    log = tmp_path / "deploy.log"
    panel = "╭────╮\n│ Deployment '{}' successfully created │\n╰────╯\n"
    text = panel.format("regression/nightly") + panel.format("specdec/ngram-local")
    out = filtered(text, "--log", str(log), "--config", str(ROOT / "prefect.yaml"),
                   "--api-url", "http://127.0.0.1:4200/api").stdout.splitlines()
    import yaml

    nightly = next(d for d in yaml.safe_load((ROOT / "prefect.yaml").read_text())["deployments"]
                   if d["name"] == "nightly")
    profiles = len(nightly["parameters"]["suite"])
    assert profiles >= 10 and nightly["schedules"][0]["cron"] == "0 2 * * *"
    assert out[-2:] == [
        f"scheduled: regression/nightly daily at 02:00 UTC on specops-cpu: {profiles} profiles, each once and judged "
        "against its history",
        f"  start one now: PREFECT_API_URL=http://127.0.0.1:4200/api {Path(sys.executable).parent / 'prefect'} "
        "deployment run regression/nightly"]
    # a schedule whose deployment was not deployed is not announced
    quiet = filtered(panel.format("specdec/ngram-local"), "--log", str(log), "--config", str(ROOT / "prefect.yaml"))
    assert "scheduled" not in quiet.stdout
