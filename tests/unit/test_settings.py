"""Every environment variable specops reads is one field of Settings: read fresh, defaulted, secrets hidden."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import get_args

import pytest
from pydantic import SecretStr

from cli.main import main
from specops.settings import Settings, env_name, secret, settings, table

ROOT = Path(__file__).resolve().parents[2]
FIELDS = list(Settings.model_fields)
SECRETS = [name for name, f in Settings.model_fields.items() if SecretStr in (f.annotation, *get_args(f.annotation))]


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch):
    for name in FIELDS:
        monkeypatch.delenv(env_name(name), raising=False)


def _plain(value) -> str:
    return value.get_secret_value() if isinstance(value, SecretStr) else str(value)


NUMBERS = [name for name, f in Settings.model_fields.items() if f.annotation is int]
HTTP_URLS = {"specops_artifacts_url": "http://given.by/the/environment"}  # validated as http(s) URLs


@pytest.mark.parametrize("name", FIELDS)
def test_each_field_reads_its_variable(monkeypatch, name):
    given = "37" if name in NUMBERS else HTTP_URLS.get(name, "/given/by/the/environment")
    monkeypatch.setenv(env_name(name), given)
    assert _plain(getattr(settings(), name)) == given


def test_a_number_that_is_not_one_names_the_variable(monkeypatch):
    monkeypatch.setenv("SPECOPS_MIN_FREE_MB", "lots")
    with pytest.raises(ValueError, match="SPECOPS_MIN_FREE_MB"):
        settings()


def test_variables_are_the_upper_case_field_names(monkeypatch):
    assert env_name("hf_token") == "HF_TOKEN" and env_name("specops_cache") == "SPECOPS_CACHE"
    with pytest.raises(KeyError):
        env_name("specops_cahce")
    monkeypatch.setenv("specops_cache", "/lower/case")
    assert settings().specops_cache is None


def test_defaults_hold_when_nothing_is_set():
    s = settings()
    assert s.specops_artifacts == Path("artifacts")
    assert s.docker_host == "unix:///var/run/docker.sock" and s.specops_min_free_mb == 100
    assert s.specops_vllm_cache == Path("/tmp/vllm-sdists")
    assert all(getattr(s, name) is None for name in FIELDS
               if name not in ("specops_artifacts", "docker_host", "specops_min_free_mb", "specops_vllm_cache"))
    assert s.model_fields_set == set()


@pytest.mark.parametrize("name", FIELDS)
def test_an_empty_variable_counts_as_unset(monkeypatch, name):
    monkeypatch.setenv(env_name(name), "")
    assert getattr(settings(), name) == Settings.model_fields[name].default


def test_read_anew_on_every_call(monkeypatch):
    assert settings().specops_cache is None
    monkeypatch.setenv("SPECOPS_CACHE", "/one")
    assert settings().specops_cache == Path("/one")
    monkeypatch.setenv("SPECOPS_CACHE", "/two")
    assert settings().specops_cache == Path("/two")


def test_tokens_keys_and_the_results_url_are_secrets():
    # the alert URL too: a Slack or Discord webhook's URL is its credential
    assert set(SECRETS) == {"hf_token", "vllm_api_key", "specops_endpoint_api_key", "specops_results_url",
                            "specops_alert_url"}


@pytest.mark.parametrize("name", SECRETS)
def test_a_secret_never_prints(monkeypatch, name):
    monkeypatch.setenv(env_name(name), "s3cret-value")
    s = settings()
    for shown in (repr(s), str(s), s.model_dump_json(), str(s.model_dump()), repr(getattr(s, name))):
        assert "s3cret-value" not in shown
    assert secret(getattr(s, name)) == "s3cret-value"
    assert secret(None) is None


def test_the_table_is_the_model():
    header, rule, *rows = table()
    assert header.startswith("| Variable |") and rule.startswith("|---")
    assert len(rows) == len(FIELDS)
    for row, (name, field) in zip(rows, Settings.model_fields.items()):
        assert row.startswith(f"| `{env_name(name)}` |") and field.description in row
        assert ("| unset |" in row) == (field.default is None)


def test_every_field_is_described():
    assert all(field.description for field in Settings.model_fields.values())


def test_the_docs_reference_prints_the_table_the_model_renders():
    from tools.docs.reference import environment

    assert "\n".join(table()) in environment(ROOT)


def test_specops_settings_prints_the_table(capsys):
    assert main(["settings"]) == 0
    assert capsys.readouterr().out == "\n".join(table()) + "\n"


def test_a_venv_make_install_built_is_found_in_the_checkout_else_beside_the_running_interpreters(tmp_path,
                                                                                                monkeypatch):
    import sys

    from specops.settings import installed_venv

    checkout, deployer = tmp_path / "clone", tmp_path / "deployer"  # a worker's clone; the checkout it runs from
    (deployer / ".venv" / "bin").mkdir(parents=True)
    monkeypatch.setattr(sys, "prefix", str(deployer / ".venv"))
    assert installed_venv(".venv-aiperf", checkout, "bin/aiperf") == checkout / ".venv-aiperf"  # neither: the clone's
    (deployer / ".venv-aiperf" / "bin").mkdir(parents=True)
    (deployer / ".venv-aiperf" / "bin" / "aiperf").touch()
    assert installed_venv(".venv-aiperf", checkout, "bin/aiperf") == deployer / ".venv-aiperf"
    (checkout / ".venv-aiperf" / "bin").mkdir(parents=True)
    (checkout / ".venv-aiperf" / "bin" / "aiperf").touch()
    assert installed_venv(".venv-aiperf", checkout, "bin/aiperf") == checkout / ".venv-aiperf"  # the checkout first


# A SPECOPS_ variable read (or set) by name: os.environ[...], .get/.pop/.setdefault(...), os.getenv(...), ... in os.environ
SPECOPS_READ = re.compile(r"""(?:getenv|environ(?:\.get|\.pop|\.setdefault)?)\s*[(\[]\s*["'](SPECOPS_\w*)"""
                          r"""|["'](SPECOPS_\w*)["']\s+(?:not\s+)?in\s+(?:os\.)?environ\b""")
HTTP_IMPORT = re.compile(r"^\s*(?:import|from)\s+(urllib\.request|requests)\b|^\s*from\s+urllib\s+import\s+(request)\b",
                         re.MULTILINE)
# A file that cannot import specops, so reads its variables itself, and one that names an HTTP library's errors.
EXEMPT = {
    "tools/deploy_source.py": "standard library only: prefect.yaml's build steps run it under any python3",
    "specops/launch/docker_launcher.py": "catches docker-py's transport errors (requests'); sends no request itself",
}


def test_specops_variables_are_read_by_the_settings_alone_and_http_spoken_by_http_client_alone():
    """Every tracked source file but the tests' (benchmarks/ and tools/ too): a SPECOPS_ variable is read through
    Settings, and urllib.request or requests is imported by specops/http_client.py alone (it is on httpx)."""
    tracked = subprocess.run(["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True, check=True)
    found = []
    for rel in tracked.stdout.split():
        path = ROOT / rel
        if rel.startswith("tests/") or rel in EXEMPT or not path.is_file():  # a file deleted in the working tree
            continue
        text = path.read_text(encoding="utf-8")
        if rel != "specops/settings.py":
            found += [f"{rel} reads {''.join(m.groups(''))}" for m in SPECOPS_READ.finditer(text)]
        if rel != "specops/http_client.py":
            found += [f"{rel} imports {''.join(m.groups(''))}" for m in HTTP_IMPORT.finditer(text)]
    assert not found, "\n".join(found)
    assert all((ROOT / rel).is_file() for rel in EXEMPT)
