"""A tritonserver that fails to start and then fails to stop is reported by why it did not start."""
from __future__ import annotations

import pytest

from specops.backends.local import backend as local
from specops.backends.triton_server import TritonStartError, TritonStopError
from specops.pipeline.backend import backend_for
from specops.profile.loader import load_profile
from specops.run.variant import variants_of


class NeverReady:
    """Stands in for TritonServer: every port clashed, and its ports outlive stop()."""

    stopped = False

    def __init__(self, *args, **kwargs):
        pass

    def start(self):
        return self

    def wait_ready(self, deadline_s):
        raise TritonStartError("tritonserver could not bind its ports in 3 attempts (exit code 1)")

    def stop(self, timeout_s=None):
        NeverReady.stopped = True
        raise TritonStopError("after stopping tritonserver pid 1: processes alive [], ports still bound [8000]")


def test_launch_keeps_the_start_error_when_stop_fails_too(monkeypatch, tmp_path, caplog):
    monkeypatch.setattr(local, "TritonServer", NeverReady)
    profile = load_profile("ngram-local").profile
    variant = variants_of(profile.method, profile.comparison.baseline)[0]
    with pytest.raises(TritonStartError, match="could not bind its ports"):
        backend_for(profile).launch(variant, tmp_path / "repo", tmp_path / "server.log")
    assert NeverReady.stopped
    assert "ports still bound [8000]" in caplog.text
