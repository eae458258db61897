"""Shared fixtures for the GPU-backend tests: shipped profiles and the upstream reference files."""
from __future__ import annotations

from pathlib import Path

import pytest

from specops.profile.loader import load_profile

ROOT = Path(__file__).resolve().parents[3]
PROFILES = ROOT / "profiles"



@pytest.fixture()
def load_gpu_profile():
    def load(name: str, overrides: tuple[str, ...] = ()):
        return load_profile(name, list(overrides)).profile

    return load
