"""Conversation JSONL: Daring-Anteater and OpenAI formats, synthesized records, errors with line numbers."""
from __future__ import annotations

import gzip
import io
import json

import pytest

from specops.bench.conversations import (
    Conversation,
    DataFileError,
    Turn,
    read_conversations,
    record_of,
    write_record,
)

DARING_ANTEATER = {
    "conversation_id": "da-1",
    "system": "Be brief.",
    "mask": "User",
    "conversations": [
        {"from": "User", "value": "What is 2+2?"},
        {"from": "Assistant", "value": "4"},
    ],
}
OPENAI = {"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "Hi"},
                       {"role": "assistant", "content": "Hello"}]}


def _write(path, *lines: str):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def test_daring_anteater_gets_its_system_prompt_as_first_turn(tmp_path):
    path = _write(tmp_path / "da.jsonl", json.dumps(DARING_ANTEATER))
    [conv] = read_conversations(path)
    assert conv.id == "da-1"
    assert conv.text_format == "chat"
    assert conv.turns == (Turn("system", "Be brief."), Turn("user", "What is 2+2?"), Turn("assistant", "4"))


def test_openai_messages_and_role_content_conversations(tmp_path):
    role_content = {"id": 7, "conversations": OPENAI["messages"][1:]}
    path = _write(tmp_path / "oa.jsonl", json.dumps(OPENAI), json.dumps(role_content))
    first, second = read_conversations(path)
    assert first.id == "line1"  # no id field: the line names it
    assert [t.role for t in first.turns] == ["system", "user", "assistant"]
    assert second.id == "7"
    assert second.turns == (Turn("user", "Hi"), Turn("assistant", "Hello"))


def test_blank_lines_are_skipped_and_line_numbers_stay_true(tmp_path):
    path = _write(tmp_path / "d.jsonl", "", json.dumps(OPENAI), "   ", json.dumps(DARING_ANTEATER), "")
    convs = read_conversations(path)
    assert [c.id for c in convs] == ["line2", "da-1"]


def test_gzip_file(tmp_path):
    path = tmp_path / "d.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.write(json.dumps(DARING_ANTEATER) + "\n")
    assert read_conversations(path)[0].id == "da-1"


def test_malformed_json_names_file_and_line(tmp_path):
    path = _write(tmp_path / "data.jsonl", json.dumps(OPENAI), "", '{"messages": [1 2]}')
    with pytest.raises(DataFileError) as err:
        read_conversations(path)
    assert str(err.value).startswith(f"{path}: line 3: not valid JSON (Expecting ',' delimiter")
    assert err.value.line_no == 3


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ({"conversations": []}, "'conversations' must be a non-empty list of turns"),
        ({"messages": "hi"}, "'messages' must be a non-empty list of turns"),
        ({"text": "hi"}, "expected exactly one of ['conversations', 'messages']"),
        ({"messages": [{"role": "tool", "content": "x"}]}, "messages[0]: unknown role 'tool'"),
        ({"conversations": [{"from": "Narrator", "value": "x"}]}, "conversations[0]: unknown role 'Narrator'"),
        ({"messages": [{"role": "user", "content": [{"type": "text"}]}]},
         "'content' must be a string or a list of text parts, got list"),
        ({"messages": [{"role": "user"}]}, "messages[0] has no 'content'"),
        ({"conversations": [{"from": "User"}]}, "conversations[0] has no 'value'"),
        ({"messages": [{"role": "user", "content": "x"}], "text_format": "raw"}, "'text_format' must be one of"),
        ({"messages": [{"role": "user", "content": "x"}], "text_format": "completion"},
         "a 'completion' record must be one user turn then one assistant turn"),
        ({"messages": OPENAI["messages"], "system": 3}, "'system' must be a string"),
        ([1, 2], "expected a JSON object, got list"),
    ],
)
def test_bad_records_are_errors_with_line_numbers(tmp_path, record, message):
    path = _write(tmp_path / "data.jsonl", json.dumps(DARING_ANTEATER), json.dumps(record))
    with pytest.raises(DataFileError) as err:
        read_conversations(path)
    assert str(err.value).startswith(f"{path}: line 2: ")
    assert message in str(err.value)


def test_empty_and_missing_files(tmp_path):
    empty = _write(tmp_path / "data.jsonl", "", "  ")
    with pytest.raises(DataFileError, match=r"data\.jsonl: empty file: no conversations$"):
        read_conversations(empty)
    with pytest.raises(DataFileError, match=r"nope\.jsonl: file not found"):
        read_conversations(tmp_path / "nope.jsonl")


def test_repeated_ids_are_an_error(tmp_path):
    path = _write(tmp_path / "d.jsonl", json.dumps(DARING_ANTEATER), json.dumps(OPENAI), json.dumps(DARING_ANTEATER))
    with pytest.raises(DataFileError, match=r"line 3: conversation id 'da-1' already used on line 1"):
        read_conversations(path)


def test_written_records_read_back(tmp_path):
    conv = Conversation("stdlib/os.walk", (Turn("user", "def f():\n"), Turn("assistant", "    return 1 \u00e9")),
                        "completion", "stdlib")
    buf = io.StringIO()
    write_record(buf, conv)
    assert buf.getvalue().endswith("\n") and buf.getvalue().count("\n") == 1
    assert json.loads(buf.getvalue()) == record_of(conv) == {
        "id": "stdlib/os.walk", "source": "stdlib", "text_format": "completion",
        "conversations": [{"role": "user", "content": "def f():\n"},
                          {"role": "assistant", "content": "    return 1 \u00e9"}],
    }
    path = tmp_path / "out.jsonl"
    path.write_text(buf.getvalue(), encoding="utf-8")
    assert read_conversations(path) == [conv]
