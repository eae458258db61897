"""Credentials the pipeline may hold for downloads, which no tool or server it starts receives."""
from __future__ import annotations

from collections.abc import Mapping

from specops.settings import env_name

SECRET_ENV = frozenset({env_name("hf_token"), "HUGGING_FACE_HUB_TOKEN"})


def scrubbed_env(env: Mapping[str, str]) -> dict[str, str]:
    """A copy of env without the credentials."""
    return {k: v for k, v in env.items() if k not in SECRET_ENV}
