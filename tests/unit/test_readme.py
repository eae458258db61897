"""The README shows what the code does: the GPU table is the one `specops profiles` derives."""
from __future__ import annotations

from pathlib import Path

from specops.profile.catalog import gpu_profile_table

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_gpu_table_is_the_profiles_and_the_matrix():
    text = README.read_text()
    table = gpu_profile_table()
    assert "\n".join(table) in text
    assert len(table) > 2 and all(row.startswith("| `") for row in table[2:])
