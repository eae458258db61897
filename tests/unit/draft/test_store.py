"""Where data and drafts are cached, and which prompts the data step asks for."""
from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from specops.draft import store
from specops.draft.spec import RESULT_FILE, DataSpec, TrainResult, TrainSpec
from specops.sources.entry_lock import exclusive
from specops.sources.integrity import CacheCorruptError
from specops.sources.schemes import ModelArtifact

TARGET = ModelArtifact(Path("/t"), "embedded:smollm2-135m", "a" * 64)


def test_prompt_items_take_sources_in_turn_and_hold_out_the_benchmark():
    items = store.prompt_items(DataSpec(prompts=["stdlib", "humaneval"], num_samples=10, humaneval_holdout=64))
    assert len(items) == 10
    assert [i.source for i in items[:4]] == ["stdlib", "humaneval", "stdlib", "humaneval"]
    humaneval = [int(i.id.split("/")[1]) for i in items if i.source == "humaneval"]
    assert min(humaneval) == 64


def test_prompt_items_fill_from_the_other_source_when_one_runs_out():
    items = store.prompt_items(DataSpec(prompts=["humaneval", "stdlib"], num_samples=120, humaneval_holdout=150))
    assert sum(i.source == "humaneval" for i in items) == 14  # 164 problems, 150 held out
    assert len(items) == 120


def test_conversation_prompts_get_the_chat_template_for_a_completion_server(tmp_path):
    talks = tmp_path / "talks.jsonl"
    talks.write_text('{"conversation_id": "c1", "conversations": [{"from": "User", "value": "hi"}]}\n')
    items = store.prompt_items(DataSpec(prompts=[], conversations=str(talks), num_samples=5),
                               chat_template=lambda text: f"<user>{text}</user>")
    assert [(i.id, i.text) for i in items] == [("conversations/c1", "<user>hi</user>")]


def test_data_key_follows_the_data_section_and_the_target():
    base = store.data_dir(Path("/c"), DataSpec(), TARGET)
    assert base == store.data_dir(Path("/c"), DataSpec(), TARGET)
    assert base != store.data_dir(Path("/c"), DataSpec(num_samples=7), TARGET)
    assert base != store.data_dir(Path("/c"), DataSpec(), ModelArtifact(Path("/t"), TARGET.source, "b" * 64))


def test_draft_key_follows_training_draft_length_and_data_but_not_the_data_section():
    data = ModelArtifact(Path("/d"), "synthesized", "c" * 64)
    spec = TrainSpec(mode="eagle3")
    key = store.draft_dir(Path("/c"), spec, 3, TARGET, data)
    assert key == store.draft_dir(Path("/c"), spec.model_copy(update={"data": DataSpec(concurrency=7)}), 3, TARGET, data)
    assert key != store.draft_dir(Path("/c"), spec, 2, TARGET, data)
    assert key != store.draft_dir(Path("/c"), spec.model_copy(update={"lr": 0.5}), 3, TARGET, data)
    assert key != store.draft_dir(Path("/c"), spec, 3, TARGET, ModelArtifact(Path("/d"), "synthesized", "d" * 64))


def test_unfinished_data_is_not_offered(tmp_path):
    assert store.finished_data(tmp_path, "x") is None
    (tmp_path / store.DATA_FILE).write_text("{}\n")
    store.mark_complete(tmp_path)
    found = store.finished_data(tmp_path, "x")
    assert found is not None and found.path == tmp_path / store.DATA_FILE and len(found.sha256) == 64


def _train_into(scratch: Path, weights: bytes = b"\x03" * 2048) -> None:
    """What train_draft leaves in its directory: the export and the record naming it."""
    (scratch / "export").mkdir(parents=True)
    (scratch / "export" / "config.json").write_text('{"architectures": ["LlamaForCausalLMEagle3"]}')
    (scratch / "export" / "model.safetensors").write_bytes(weights)
    TrainResult(mode="eagle3", export_dir=scratch / "export", sequences=1, tokens=2, steps=3, train_seconds=4.0,
                prepare_seconds=5.0, final_loss=6.0).write(scratch / RESULT_FILE)


def _trained(cache):
    """A draft entry as the training step publishes it, and the artifact that step returns."""
    out = cache / "drafts" / "key"
    _train_into(store.training_dir(out))
    result = store.publish_draft(store.training_dir(out), out)
    digest = store.verified_export(out, result.export_dir)
    return out, ModelArtifact(out / "export", "trained:eagle3", digest, extra={"train_result": str(out / RESULT_FILE)})


def test_a_trained_draft_is_published_whole_by_one_rename_and_names_its_final_place(tmp_path):
    out = tmp_path / "drafts" / "key"
    scratch = store.training_dir(out)
    _train_into(scratch)
    assert not out.exists()  # nothing a reader could take while training runs
    result = store.publish_draft(scratch, out)
    assert not scratch.exists() and store.is_complete(out)
    assert result.export_dir == out / "export" == TrainResult.read(out / RESULT_FILE).export_dir
    store.verified_export(out, out / "export")  # the manifest recorded in scratch holds after the rename


def test_a_draft_published_first_by_another_run_stands(tmp_path):
    out, draft = _trained(tmp_path)
    late = store.training_dir(out)
    _train_into(late, weights=b"\x04" * 2048)
    store.publish_draft(late, out)
    assert not late.exists() and store.verified_export(out, draft.path) == draft.sha256


def test_an_unfinished_entry_of_an_older_layout_is_replaced(tmp_path):
    out = tmp_path / "drafts" / "key"
    (out / "export").mkdir(parents=True)  # trained in place, killed before its marker
    _train_into(store.training_dir(out))
    store.publish_draft(store.training_dir(out), out)
    assert (out / "export" / "model.safetensors").stat().st_size == 2048 and store.is_complete(out)


_HOLD = """
import sys, time
from pathlib import Path
from specops.draft import store
from specops.sources.entry_lock import exclusive
with exclusive(store.data_lock(Path(sys.argv[1]))):
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def test_one_process_at_a_time_holds_a_data_sets_lock_and_a_dead_holder_releases_it(tmp_path):
    directory = tmp_path / "train-data" / "key"
    holder = subprocess.Popen([sys.executable, "-c", _HOLD, str(directory), "60"], stdout=subprocess.PIPE, text=True,
                              cwd=Path(__file__).resolve().parents[3])
    try:
        assert holder.stdout.readline() == "held\n"
        waited = []
        killer = threading.Timer(1.0, holder.kill)

        def wait_then_kill() -> None:
            waited.append(time.monotonic())
            killer.start()  # the holder dies only once this process is known to be waiting for it

        with exclusive(store.data_lock(directory), waiting=wait_then_kill):
            acquired = time.monotonic()
        if waited:
            killer.join()
    finally:
        holder.kill()
        holder.wait()
    assert len(waited) == 1 and holder.returncode == -signal.SIGKILL and acquired >= waited[0]
    with exclusive(store.data_lock(directory), waiting=lambda: waited.append("again")):
        pass
    assert len(waited) == 1  # free now: no waiting


def test_a_damaged_trained_draft_is_moved_aside_so_the_next_run_trains_it_again(tmp_path):
    out, draft = _trained(tmp_path)
    (out / "export" / "model.safetensors").write_bytes(b"\x03" * 100)
    with pytest.raises(CacheCorruptError) as caught:
        store.verified_export(out, draft.path)
    message = str(caught.value)
    assert f"cache entry {out} is corrupt: model.safetensors: size changed (2048 -> 100 bytes)" in message
    assert "the next run trains the draft again" in message
    assert not out.exists() and caught.value.moved_to.name.startswith("key.corrupt-")
    assert not store.is_complete(out)  # the next run's training step finds no entry: it trains
