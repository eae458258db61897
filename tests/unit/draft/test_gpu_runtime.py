"""The GPU path's run-time pieces without a GPU or Docker: the training container's result collected, the
Medusa layout written from a ModelOpt checkpoint, the synthesis server on backend vllm-serve as the serving seam
starts it (its lifecycle around a failing synthesis: tests/unit/flows/test_prepare.py),
dataset URIs, stable cache keys. The containers cannot run here (no GPU): a fake launcher stands in for Docker."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

import specops.backends.container.backend
from specops.draft import store
from specops.draft.gpu import SYNTHESIS, VLLM_KEY_ENV, GpuTraining, synthesis_endpoint
from specops.draft.gpu_train import export_medusa_checkpoint, train_in_container
from specops.draft.spec import DataSpec, TrainSpec
from specops.pipeline.backend import synthesis_backend_for
from specops.pipeline.render import render_repository, start_variant, stop_variant
from specops.profile.loader import load_profile
from specops.run.rundir import RunDir
from specops.runtime.medusa_proposer import MEDUSA_WEIGHTS
from specops.sources.hub_datasets import parse_dataset_uri
from specops.sources.schemes import ModelArtifact


def _medusa_checkpoint(directory: Path, heads: int = 2, hidden: int = 8, vocab: int = 16) -> None:
    import torch
    from safetensors.torch import save_file

    directory.mkdir(parents=True)
    tensors = {"lm_head.weight": torch.zeros(vocab, hidden), "model.embed_tokens.weight": torch.zeros(vocab, hidden)}
    for i in range(heads):
        tensors[f"medusa_heads.{i}.0.linear.weight"] = torch.full((hidden, hidden), float(i))
        tensors[f"medusa_heads.{i}.0.linear.bias"] = torch.zeros(hidden)
        tensors[f"medusa_heads.{i}.1.weight"] = torch.zeros(vocab, hidden)
    save_file(tensors, str(directory / "model.safetensors"))
    (directory / "trainer_state.json").write_text(json.dumps(
        {"global_step": 7, "log_history": [{"loss": 3.0, "step": 1}, {"loss": 2.5, "step": 7}, {"train_runtime": 9}]}))


def _target(directory: Path) -> Path:
    directory.mkdir()
    (directory / "config.json").write_text(json.dumps({"hidden_size": 8, "vocab_size": 16}))
    return directory


def test_medusa_layout_from_a_modelopt_checkpoint(tmp_path):
    from safetensors.torch import load_file

    _medusa_checkpoint(tmp_path / "ckpt")
    out = export_medusa_checkpoint(tmp_path / "ckpt", tmp_path / "export", _target(tmp_path / "target"))
    config = json.loads((out / "config.json").read_text())
    assert (config["medusa_num_heads"], config["medusa_num_layers"], config["hidden_size"]) == (2, 1, 8)
    weights = load_file(str(out / MEDUSA_WEIGHTS))
    assert sorted(weights) == ["0.0.linear.bias", "0.0.linear.weight", "0.1.weight",
                               "1.0.linear.bias", "1.0.linear.weight", "1.1.weight"]
    assert float(weights["1.0.linear.weight"][0, 0]) == 1.0


def test_medusa_export_names_a_checkpoint_without_heads(tmp_path):
    (tmp_path / "ckpt").mkdir()
    with pytest.raises(RuntimeError, match="no medusa_heads"):
        export_medusa_checkpoint(tmp_path / "ckpt", tmp_path / "export", _target(tmp_path / "target"))


class FakeLauncher:
    """A fake Docker launcher (no Docker or GPU here): records the specs and stops; `run` plays the training
    container by writing its checkpoint; `ready`/`stop_error` play a server that never answers or will not stop."""

    def __init__(self, on_run=None, ready=True, stop_error=None):
        self.specs, self.stopped, self.on_run = [], [], on_run
        self.ready, self.stop_error = ready, stop_error

    def run(self, spec, log_path, timeout_s, check=True):
        self.specs.append((spec, timeout_s))
        out = next(Path(m.source) for m in spec.mounts if m.target == "/specops/out")
        assert (out / "recipe.yaml").is_file()  # the container reads it from its scratch mount
        self.on_run(out)
        return 0

    def start(self, spec, log_path):
        self.specs.append(spec)
        return type("Handle", (), {"name": "specops-x", "id": "c0ffee",
                                   "record": lambda self: {"container_id": "c0ffee", "container_name": "specops-x"}})()

    def wait_ready(self, handle, probe, deadline_s):
        if not self.ready:
            raise TimeoutError(f"not ready within {deadline_s}s")
        return 0.0

    def stop(self, handle, timeout_s):
        self.stopped.append(timeout_s)
        if self.stop_error is not None:
            raise self.stop_error


def test_training_container_result_is_collected(tmp_path):
    data = tmp_path / "data" / "data.jsonl"
    data.parent.mkdir()
    data.write_text('{"id": "a"}\n{"id": "b"}\n')
    spec = TrainSpec(mode="medusa", epochs=1, lr=1e-5, gpu=GpuTraining(gpus=2))
    launcher = FakeLauncher(lambda out: _medusa_checkpoint(out / "checkpoint"))
    result = train_in_container(spec, _target(tmp_path / "target"), data, tmp_path / "out", print, draft_length=2,
                                profile="p", launcher=launcher)
    container, timeout = launcher.specs[0]
    assert container.gpus == 2 and timeout == spec.gpu.timeout_s
    assert "--num_processes 2 --multi_gpu main.py" in container.command[-1]
    assert (result.steps, result.final_loss, result.sequences) == (7, 2.5, 2)
    assert (result.export_dir / MEDUSA_WEIGHTS).is_file()


def test_training_container_without_export_fails_naming_it(tmp_path):
    data = tmp_path / "data.jsonl"
    data.write_text('{"id": "a"}\n')
    spec = TrainSpec(mode="eagle", gpu=GpuTraining())
    with pytest.raises(RuntimeError, match="left no export at"):
        train_in_container(spec, _target(tmp_path / "target"), data, tmp_path / "out", print, draft_length=3,
                           launcher=FakeLauncher(lambda out: None))


TINYLLAMA_MOUNT = "/hf-models/TinyLlama-1.1B-Chat-v1.0"  # backend vllm-serve mounts <mount_root>/<model name>


@pytest.fixture
def synthesis(tmp_path, monkeypatch):
    """The eagle seed's synthesis server as backend vllm-serve, rendered and started as the flow's serving seam does
    (specops.pipeline.render.start_variant), through a fake Docker launcher; the run directory is tmp_path/run."""
    monkeypatch.setenv("SPECOPS_CACHE", str(tmp_path / "cache"))  # the hub cache the container mounts
    monkeypatch.setenv(VLLM_KEY_ENV, "s3cret")
    target = ModelArtifact(_target(tmp_path / "target"), "hf://TinyLlama/TinyLlama-1.1B-Chat-v1.0", "abc")
    (tmp_path / "run").mkdir()

    def start(launcher, *overrides):
        monkeypatch.setattr(specops.backends.container.backend, "DockerLauncher", lambda: launcher)
        backend = synthesis_backend_for(load_profile("eagle-vllm-seed", ["serving.stop_timeout_s=7", *overrides])
                                        .profile)
        repo = render_repository(backend, SYNTHESIS, target, None, tmp_path / "cache").value
        return backend, start_variant(backend, SYNTHESIS, repo, RunDir(tmp_path / "run"), owner=None)

    return start


def test_synthesis_server_is_vllm_serve_keyed_by_name_only(tmp_path, synthesis):
    launcher = FakeLauncher()
    backend, server = synthesis(launcher)
    endpoint = synthesis_endpoint(server)
    assert endpoint.model == "synthesis" and endpoint.api_key == "s3cret"  # --served-model-name <variant>
    assert endpoint.url.startswith("http://127.0.0.1:")
    stop_variant(server, backend.serving.stop_timeout_s)
    assert launcher.stopped == [7]
    spec = launcher.specs[0]
    port = endpoint.url.rsplit(":", 1)[1]
    assert spec.command == ["vllm", "serve", "--config", "/config/serve.yaml", "--host", "127.0.0.1", "--port", port,
                            "--served-model-name", "synthesis"]
    # the key by name only: in the container's environment as the launcher's, on no command line or label value
    assert VLLM_KEY_ENV in spec.secret_env and "s3cret" not in repr(spec)
    assert spec.env["HF_HUB_OFFLINE"] == "1" and "VLLM_SERVER_DEV_MODE" not in spec.env  # no dev endpoints
    # the downloaded target, read-only, where serve.yaml names it; the rendered files, staged in the run, at /config
    repo = tmp_path / "run" / "repository" / "synthesis"
    mounts = {m.target: (m.source, m.read_only) for m in spec.mounts}
    assert mounts[TINYLLAMA_MOUNT] == (tmp_path / "target", True)
    assert mounts["/config"] == (repo, True)
    assert yaml.safe_load((repo / "serve.yaml").read_text()) == {"model": TINYLLAMA_MOUNT, "tensor-parallel-size": 1}
    assert (spec.image, spec.shm_size, spec.ipc_mode) == ("nvcr.io/nvidia/tritonserver:26.02-vllm-python-py3", "1G",
                                                          None)
    # the janitor finds it by profile and role
    assert spec.labels["specops.profile"] == "eagle-vllm-seed" and spec.labels["specops.role"] == "server-synthesis"


def test_synthesis_server_settings_reach_vllm(tmp_path, synthesis):
    launcher = FakeLauncher()
    synthesis(launcher, "draft.train.data.server.tensor_parallel_size=2",
              "draft.train.data.server.gpu_memory_utilization=0.8", "draft.train.data.server.gpus=0,1")
    spec = launcher.specs[0]
    assert yaml.safe_load((tmp_path / "run" / "repository" / "synthesis" / "serve.yaml").read_text()) == {
        "model": TINYLLAMA_MOUNT, "tensor-parallel-size": 2, "gpu-memory-utilization": 0.8}
    assert spec.gpus == ["0", "1"]


def test_synthesis_server_that_never_gets_ready_is_removed(synthesis):
    launcher = FakeLauncher(ready=False)
    with pytest.raises(TimeoutError):
        synthesis(launcher)
    assert launcher.stopped == [7]


@pytest.mark.parametrize("uri, parsed", [
    ("hf://datasets/nvidia/Daring-Anteater/train.jsonl", ("nvidia/Daring-Anteater", None, "train.jsonl")),
    ("hf://datasets/org/name@v1/sub/dir/x.jsonl.gz", ("org/name", "v1", "sub/dir/x.jsonl.gz")),
])
def test_dataset_uris(uri, parsed):
    ref = parse_dataset_uri(uri)
    assert (ref.repo_id, ref.revision, ref.filename) == parsed


@pytest.mark.parametrize("uri", ["hf://datasets/org/name", "hf://datasets/org/name/x.csv",
                                 "hf://datasets/org/name@/x.jsonl", "hf://datasets/org/name/../x.jsonl"])
def test_bad_dataset_uris(uri):
    with pytest.raises(ValueError, match="hf://datasets/org/name"):
        parse_dataset_uri(uri)


def test_cache_keys_of_cpu_trainings_are_unchanged_by_the_gpu_sections(tmp_path):
    """Data sets and drafts cached before the GPU sections existed keep their keys (payloads as they were)."""
    target = ModelArtifact(tmp_path, "embedded:smollm2-135m", "abc")
    data, train = DataSpec(), TrainSpec(mode="eagle3")
    before = {"recipe": store.DATA_RECIPE, "target": "abc",
              "data": {k: v for k, v in data.model_dump(mode="json").items() if k != "server"}}
    assert store.data_dir(tmp_path, data, target).name == store._key(before)
    train_before = {k: v for k, v in train.model_dump(mode="json", exclude={"data"}).items() if k != "gpu"}
    payload = {"recipe": store.DRAFT_RECIPE, "train": train_before, "draft_length": 3, "target": "abc", "data": "d"}
    assert store.draft_dir(tmp_path, train, 3, target, ModelArtifact(tmp_path, "x", "d")).name == store._key(payload)
