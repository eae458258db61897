"""`specops alert`: the errors it ends with before any block is saved or sent, each naming the fix, and the
URL never echoed whole. (The block saved and a test alert received: tests/integration/flows/test_no_worker.py.)"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # a fresh interpreter per case

REPO_ROOT = Path(__file__).resolve().parents[3]
SECRET_URL = "ftp://hooks.example.com/services/T000/B000/secret-part"


def alert(args: list[str], tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "SPECOPS_"))}
    base.update(PREFECT_HOME=str(tmp_path / "prefect-home"), **env)
    return subprocess.run([sys.executable, "-m", "cli", "alert", *args], cwd=REPO_ROOT, env=base,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("command", ["setup", "test"])
def test_without_a_configured_server_it_refuses_rather_than_use_a_throwaway_one(command, tmp_path):
    done = alert([command], tmp_path, SPECOPS_ALERT_URL="http://127.0.0.1:9/alerts")
    assert done.returncode == 4, done.stderr
    assert "no Prefect server configured (PREFECT_API_URL)" in done.stderr and "make up" in done.stderr
    assert "Traceback" not in done.stderr


def test_setup_without_the_url_names_the_variable_and_says_why_not_argv(tmp_path):
    done = alert(["setup"], tmp_path, PREFECT_API_URL="http://127.0.0.1:9/api")
    assert done.returncode == 4, done.stderr
    assert "SPECOPS_ALERT_URL is unset" in done.stderr and "not on the command line" in done.stderr


def test_setup_refuses_a_url_that_is_not_http_and_does_not_echo_it(tmp_path):
    done = alert(["setup"], tmp_path, PREFECT_API_URL="http://127.0.0.1:9/api", SPECOPS_ALERT_URL=SECRET_URL)
    assert done.returncode == 4, done.stderr
    assert "give an http(s) URL" in done.stderr and "secret-part" not in done.stdout + done.stderr


def test_setup_saves_only_a_webhook_block(tmp_path):
    done = alert(["setup", "--block", "slack-webhook/team"], tmp_path, PREFECT_API_URL="http://127.0.0.1:9/api",
                 SPECOPS_ALERT_URL="https://hooks.slack.com/services/T/B/secret-part")
    assert done.returncode == 4, done.stderr
    assert "saves a Webhook block, named webhook/<name>" in done.stderr and "secret-part" not in done.stderr


def test_setup_for_the_inbox_without_its_token_file_names_the_file_and_what_makes_it(tmp_path):
    done = alert(["setup", "--inbox-token-file", str(tmp_path / "alert-token")], tmp_path,
                 PREFECT_API_URL="http://127.0.0.1:9/api", SPECOPS_ALERT_URL="http://127.0.0.1:4201/alerts")
    assert done.returncode == 4, done.stderr
    assert str(tmp_path / "alert-token") in done.stderr and "specops serve-artifacts --token-file" in done.stderr
    assert "Traceback" not in done.stderr
