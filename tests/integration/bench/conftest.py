"""A real tritonserver serving the product's Python-backend model with a STAND-IN engine.

The model repository is rendered with the product's own pieces (`python_generate_config`,
`write_python_model` -> `specops/runtime/triton_model.py`); only the decoding engine is the
stand-in in bench_standin_engine.py, so genai-perf's requests go through the real vLLM-I/O
parsing without loading a model. genai-perf's tokenizer is the embedded SmolLM2 checkpoint's.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from specops.backends.triton_server import TritonServer
from specops.sources.embedded import fetch_embedded
from specops.triton.client import Endpoint
from specops.triton.model_config import python_generate_config
from specops.triton.repository import write_python_model

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parents[2]
ENGINE_FILE = HERE / "bench_standin_engine.py"
MODEL_NAME = "bench_standin"
TOKEN_DELAY_S = 0.002


@dataclass(frozen=True)
class StandinServer:
    endpoint: Endpoint
    model: str
    record_path: Path  # one JSON line per generate() call: what the engine was asked for
    log_file: Path


@pytest.fixture(scope="session")
def tokenizer_dir() -> Path:
    """The embedded target's checkpoint dir (tokenizer files included); cached across runs."""
    artifact = fetch_embedded(REPO_ROOT / ".cache" / "specops", log=lambda msg: None)
    assert (artifact.path / "tokenizer_config.json").is_file(), artifact.path
    return artifact.path


@pytest.fixture(scope="module")
def standin_server(tmp_path_factory) -> StandinServer:
    root = tmp_path_factory.mktemp("bench-triton")
    record_path = root / "engine-calls.jsonl"
    config = python_generate_config(
        MODEL_NAME,
        model_dir=root,  # unused by the stand-in engine
        method="none",
        options={"delay_s": TOKEN_DELAY_S, "record_path": str(record_path)},
        engine="bench_standin_engine:RecordingEchoEngine",
    )
    write_python_model(root / "repo", config, extra_files=[ENGINE_FILE])
    log_file = root / "tritonserver.log"
    with TritonServer(root / "repo", log_file) as server:
        endpoint = server.wait_ready(120)
        yield StandinServer(endpoint, MODEL_NAME, record_path, log_file)
