"""Every method x backend pair of the registry: what a backend's support table says it serves plans
on its default image; every other pair is refused when the profile loads (exit 2, naming the field)."""
from __future__ import annotations

import pytest
import yaml

from cli.main import main
from specops.backends import BACKENDS
from specops.methods import METHODS

PAIRS = [(b, m) for b in BACKENDS.names() for m in METHODS.names() if m != "none"]


def _profile(tmp_path, backend: str, method: str):
    doc = {"name": f"{method}-{backend}", "method": {"kind": method}, "backend": {"kind": backend},
           "target": {"source": "hf://org/target"}}
    if METHODS.get(method).needs_draft:
        doc["draft"] = {"source": "hf://org/draft"}
    path = tmp_path / f"{method}-{backend}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.mark.parametrize("backend, method", PAIRS)
def test_supported_pairs_plan_and_the_others_are_refused_at_load(backend, method, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SPECOPS_CACHE", str(tmp_path / "cache"))
    code = main(["plan", str(_profile(tmp_path, backend, method))])
    out, err = capsys.readouterr()
    if BACKENDS.get(backend).supports(method):
        assert code == 0, err
        assert f"variant speculative (method {method})" in out and "variant base (method none)" in out
        assert "[acceptance]" in out and "[benchmark]" in out
    else:
        assert code == 2, out
        assert "method.kind:" in err and f"method {method!r} is not supported by backend {backend!r}" in err
        assert "Traceback" not in err


def test_every_backend_serves_some_method_and_the_matrix_is_derived():
    """BackendSpec.methods comes from each support table (no hand-kept list to keep in step)."""
    from specops.backends.trtllm import engine_support as trtllm_engine_support
    from specops.backends.trtllm import llmapi_support
    from specops.backends.vllm import support as vllm_support

    assert BACKENDS.get("vllm").methods is vllm_support.METHODS
    assert BACKENDS.get("trtllm").methods is BACKENDS.get("trtllm-serve").methods is llmapi_support.METHODS
    assert BACKENDS.get("trtllm-engine").methods is trtllm_engine_support.METHODS
    assert "medusa" not in llmapi_support.METHODS and "eagle" not in llmapi_support.METHODS
    assert "eagle3" not in trtllm_engine_support.METHODS
