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
