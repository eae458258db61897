"""tasks/models.download_workload: the prompts read at the download step, and a run that would send chat requests
to a target without a chat template refused there, naming the field, before anything is served."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from prefect.logging import disable_run_logger

from specops.backends.spec import FieldError
from specops.profile.loader import load_profile
from specops.run.rundir import RunDir
from specops.sources.schemes import ModelArtifact, has_chat_template
from tasks.models import download_workload
from tests.reference import REFERENCE

MT_BENCH = REFERENCE / "eagle_data" / "mt_bench_question.jsonl"


def target(path: Path, template: str | None) -> ModelArtifact:
    path.mkdir(parents=True, exist_ok=True)
    if template is not None:
        (path / "tokenizer_config.json").write_text(json.dumps({"chat_template": template}))
    return ModelArtifact(path=path, source="hf://org/model", sha256="0" * 64)


def test_chat_requests_to_a_target_without_a_chat_template_are_refused_naming_the_field(tmp_path):
    profile = load_profile("ngram-vllm-serve-cpu", [f"benchmark.prompts={MT_BENCH}"]).profile
    run = RunDir(tmp_path / "run")
    with disable_run_logger():
        with pytest.raises(FieldError) as refused:
            download_workload.fn(profile, target(tmp_path / "plain", None), tmp_path / "cache", run)
        assert "benchmark.api" in str(refused.value) and "no chat template" in str(refused.value)
        templated = download_workload.fn(profile, target(tmp_path / "chat", "{{ messages }}"), tmp_path / "cache", run)
        assert templated.chat and templated.request.name == "chat"
        raw = load_profile("ngram-vllm-serve-cpu", [f"benchmark.prompts={MT_BENCH}", "benchmark.api=completions"])
        sent_raw = download_workload.fn(raw.profile, target(tmp_path / "plain", None), tmp_path / "cache", run)
        assert not sent_raw.chat  # completions asked for: no template needed


def test_a_chat_template_is_found_where_transformers_and_vllm_read_it(tmp_path):
    assert not has_chat_template(target(tmp_path / "none", None).path)
    assert has_chat_template(target(tmp_path / "config", "{{ x }}").path)
    (tmp_path / "jinja").mkdir()
    (tmp_path / "jinja" / "chat_template.jinja").write_text("{{ x }}")
    assert has_chat_template(tmp_path / "jinja")


def test_a_backend_without_a_chat_endpoint_sends_conversations_raw_and_an_explicit_chat_is_refused_at_load():
    from specops.bench.sampling import planned
    from specops.profile.errors import ProfileError
    from specops.profile.workload import decided

    local = load_profile("ngram-local", [f"benchmark.prompts={MT_BENCH}"]).profile
    kind = decided(local, planned(local.benchmark)).request
    assert not kind.chat and "no chat endpoint here" in kind.note
    with pytest.raises(ProfileError, match="benchmark.api: no chat API here: aiperf drives .*allowed: auto, "
                                           "completions"):
        load_profile("ngram-local", [f"benchmark.prompts={MT_BENCH}", "benchmark.api=chat"])
