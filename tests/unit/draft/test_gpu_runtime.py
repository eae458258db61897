"""The GPU path's run-time pieces without a GPU or Docker: the training container's result collected, the
Medusa layout written from a ModelOpt checkpoint, the vLLM server's lifecycle, dataset URIs, stable cache keys."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from specops.draft import store
from specops.draft.datasets import parse_dataset_uri
from specops.draft.gpu import VLLM_KEY_ENV, GpuTraining, VllmSynthesisServer
from specops.draft.gpu_synthesis import synthesis_server
from specops.draft.gpu_train import MEDUSA_WEIGHTS, export_medusa_checkpoint, train_in_container
from specops.draft.spec import DataSpec, TrainSpec
from specops.sources.base import ModelArtifact


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
    """Records the specs; `run` plays the training container by writing its checkpoint."""

    def __init__(self, on_run=None):
        self.specs, self.stopped, self.on_run = [], [], on_run

    def run(self, spec, log_path, timeout_s, check=True):
        self.specs.append((spec, timeout_s))
        out = next(Path(m.source) for m in spec.mounts if m.target == "/specops/out")
        assert (out / "recipe.yaml").is_file()  # the container reads it from its scratch mount
        self.on_run(out)
        return 0

    def start(self, spec, log_path):
        self.specs.append(spec)
        return type("Handle", (), {"name": "specops-x"})()

    def wait_ready(self, handle, probe, deadline_s):
        return 0.0

    def stop(self, handle, timeout_s):
        self.stopped.append(timeout_s)


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


def test_synthesis_server_is_stopped_and_keyed_by_name_only(tmp_path, monkeypatch):
    monkeypatch.setenv(VLLM_KEY_ENV, "s3cret")
    launcher = FakeLauncher()
    with synthesis_server(VllmSynthesisServer(), "p", tmp_path, "hf://TinyLlama/TinyLlama-1.1B-Chat-v1.0",
                          "127.0.0.1", tmp_path / "log", 60, 7, launcher=launcher) as endpoint:
        assert endpoint.model == "TinyLlama/TinyLlama-1.1B-Chat-v1.0" and endpoint.api_key == "s3cret"
        assert endpoint.url.startswith("http://127.0.0.1:")
    spec = launcher.specs[0]
    assert spec.secret_env == (VLLM_KEY_ENV,) and "s3cret" not in " ".join(spec.command)
    assert spec.command[:3] == ["vllm", "serve", "/hf-models/target"] and launcher.stopped == [7]
    with pytest.raises(KeyError), synthesis_server(VllmSynthesisServer(), "p", tmp_path, "/local/model",
                                                   "127.0.0.1", tmp_path / "log", 60, 7, launcher=launcher):
        raise KeyError("synthesis failed")
    assert launcher.stopped == [7, 7]  # stopped on the error path too


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
