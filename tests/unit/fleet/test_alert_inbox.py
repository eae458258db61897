"""The alert inbox's token: made once, readable by its user only, appended to the inbox URL the alert block keeps
secret, and never written to the server's log."""
from __future__ import annotations

import stat

from specops.fleet.alert_inbox import inbox_url, masked, read_or_create_token
from specops.fleet.pools import masked_url


def test_the_token_is_made_once_for_its_user_only_and_then_reused(tmp_path):
    path = tmp_path / "home" / "alert-token"
    token = read_or_create_token(path)
    assert len(token) >= 32 and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert read_or_create_token(path) == token  # a restarted server takes what the saved block carries
    path.write_text("")
    assert read_or_create_token(path) not in ("", token)


def test_the_inbox_url_ends_in_the_token_and_is_shown_masked(tmp_path):
    path = tmp_path / "alert-token"
    token = read_or_create_token(path)
    url = inbox_url("http://127.0.0.1:4201/alerts/", path)
    assert url == f"http://127.0.0.1:4201/alerts/{token}"
    assert token not in masked_url(url) and masked_url(url) == "http://127.0.0.1:4201/alerts/***"


def test_the_servers_log_lines_name_no_token():
    line = '"POST /alerts/s3cret-TOKEN_x HTTP/1.1" 204 -'
    assert masked(line) == '"POST /alerts/*** HTTP/1.1" 204 -' and masked("GET /alerts HTTP/1.1") == "GET /alerts HTTP/1.1"
