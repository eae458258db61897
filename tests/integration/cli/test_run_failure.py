"""A step that fails inside the flow ends `specops run` with one message naming the step and the
error: Prefect's task and flow tracebacks stay off the console (they still reach the API)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.integration.support import REPO_ROOT, service_env

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_draft_vocabulary_mismatch_is_one_message(embedded_model, tmp_path):
    draft = tmp_path / "other-vocabulary"
    draft.mkdir()
    (draft / "config.json").write_text(json.dumps({"model_type": "llama", "vocab_size": 1000}))
    args = ["run", "draft-target-local", "--run-id", "mismatch",
            "--set", f"draft.source={draft}", "--set", "draft.train=null"]
    proc = subprocess.run([sys.executable, "-m", "cli", *args], cwd=REPO_ROOT, env=service_env(tmp_path),
                          capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out[-4000:]
    assert "Traceback" not in out
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("specops: draft-target-local FAILED at download (draft): VocabularyMismatch:"), last
    assert f"draft {draft}: vocab_size 1000" in last and "report: " in last
    assert "VocabularyMismatch" in (tmp_path / "artifacts" / "draft-target-local" / "mismatch" / "report.md").read_text()
