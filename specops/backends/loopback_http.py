"""Plain HTTP to servers on loopback: readiness probes, JSON requests, metrics."""
from __future__ import annotations

import json
import urllib.request
from typing import Any


def _opener():
    return urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never a proxy


def http_ok(url: str, timeout_s: float = 2.0) -> bool:
    try:
        with _opener().open(url, timeout=timeout_s) as resp:
            return 200 <= resp.status < 300
    except OSError:
        return False


def get_json(url: str, timeout_s: float) -> Any:
    with _opener().open(url, timeout=timeout_s) as resp:
        return json.loads(resp.read().decode("utf-8", "replace") or "null")


def post_json(url: str, body: dict[str, Any], timeout_s: float, headers: dict[str, str] | None = None
              ) -> dict[str, Any]:
    req = urllib.request.Request(url, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json", **(headers or {})})
    with _opener().open(req, timeout=timeout_s) as resp:
        return json.loads(resp.read().decode("utf-8", "replace"))


def get_text(url: str, timeout_s: float) -> str:
    with _opener().open(url, timeout=timeout_s) as resp:
        return resp.read().decode("utf-8", "replace")
