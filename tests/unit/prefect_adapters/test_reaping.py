"""What `specops janitor` asks Prefect: without an API to ask it says why, and never starts one."""
from __future__ import annotations

import pytest
from prefect.settings import PREFECT_API_URL, temporary_settings

from prefect_adapters.reaping import ApiUnavailable, flow_runs_alive


def test_no_configured_api_is_said_so():
    with temporary_settings({PREFECT_API_URL: None}), pytest.raises(ApiUnavailable, match="PREFECT_API_URL is unset"):
        flow_runs_alive({"5b0e2a4c-1111-2222-3333-444455556666"})


def test_an_api_that_does_not_answer_is_said_so():
    with temporary_settings({PREFECT_API_URL: "http://127.0.0.1:9/api"}), \
            pytest.raises(ApiUnavailable, match="does not answer"):
        flow_runs_alive({"5b0e2a4c-1111-2222-3333-444455556666"}, timeout_s=2)


def test_the_hook_credits_the_run_only_with_what_it_left(monkeypatch, capsys):
    """Shared-memory regions of any dead process are removed by the same sweep; they are said apart, not counted
    as the flow run's."""
    from collections import Counter
    from types import SimpleNamespace

    from prefect_adapters import reaping

    monkeypatch.setattr(reaping.janitor, "sweep", lambda owner: Counter({"server": 1, reaping.janitor.SHM_REGION: 6}))
    monkeypatch.setattr(reaping.janitor, "remove_containers", lambda owner: 2)
    reaping.reap_servers(SimpleNamespace(name="specdec"), SimpleNamespace(id="run-a"), SimpleNamespace(name="Crashed"))
    assert capsys.readouterr().out == ("specdec Crashed: stopped 2 container, 1 server left by flow run run-a; "
                                       "removed 6 shared-memory region(s) of dead specops processes\n")
    monkeypatch.setattr(reaping.janitor, "sweep", lambda owner: Counter())
    monkeypatch.setattr(reaping.janitor, "remove_containers", lambda owner: 0)
    reaping.reap_servers(SimpleNamespace(name="specdec"), SimpleNamespace(id="run-a"), SimpleNamespace(name="Crashed"))
    assert capsys.readouterr().out == "specdec Crashed: stopped nothing left by flow run run-a\n"
