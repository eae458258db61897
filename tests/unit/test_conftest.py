"""The suite's own hygiene: what tests/conftest.py makes for a run, it removes."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_a_pytest_run_leaves_no_lock_directory_in_the_temp_directory(tmp_path):
    """Each pytest process gets a lock directory of its own (tests/conftest.py); every run used to leave it behind
    as specops-locks-main-* in the system temp directory."""
    env = dict(os.environ, TMPDIR=str(tmp_path))
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/unit/test_fields.py"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("specops-locks-")) == []
