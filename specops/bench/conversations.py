"""Conversation JSONL files: user-supplied data and the synthesized training file.

Accepted per-line formats (normalized to `Conversation`):
  ModelOpt's Daring-Anteater  {"conversation_id", "conversations": [{"from": "User", "value"}], "system"?}
  ShareGPT                   {"conversations": [{"from": "human" | "gpt" | "system", "value"}]}
  OpenAI-style               {"messages": [{"role": "user", "content"}]}  (or "conversations"; a content may be a
                             list of parts, of which the text parts are joined)
  synthesized records        {"id", "source", "text_format", "conversations": [{"role", "content"}]}

`text_format` "completion": the user content is a raw prompt and the assistant content its raw
continuation (no chat template); "chat" (the default): the turns go through the chat template.
"""
from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

ROLES = ("system", "user", "assistant")
# ShareGPT's speakers (and the chat apps its dumps came from) by the role they play
ROLE_ALIASES = {"human": "user", "gpt": "assistant", "chatgpt": "assistant", "bard": "assistant", "bing": "assistant"}
TEXT_FORMATS = ("completion", "chat")
_TURN_LISTS = ("conversations", "messages")
_ID_KEYS = ("id", "conversation_id")


class DataFileError(ValueError):
    """A data file that is missing, empty, or has a line in none of the accepted formats."""

    def __init__(self, path: Path | str, reason: str, line_no: int | None = None):
        where = f"{path}: line {line_no}: " if line_no is not None else f"{path}: "
        super().__init__(where + reason)
        self.path = Path(path)
        self.line_no = line_no


@dataclass(frozen=True)
class Turn:
    role: str  # "system" | "user" | "assistant"
    content: str


@dataclass(frozen=True)
class Conversation:
    id: str
    turns: tuple[Turn, ...]
    text_format: str = "chat"
    source: str = ""  # where the prompt came from (synthesized records); "" when unknown


def read_conversations(path: Path | str) -> list[Conversation]:
    """Every conversation in a .jsonl / .jsonl.gz file; DataFileError names file and line."""
    path = Path(path)
    if not path.is_file():
        raise DataFileError(path, "file not found")
    conversations: list[Conversation] = []
    first_line: dict[str, int] = {}
    for line_no, line in _lines(path):
        conversation = parse_line(path, line_no, line)
        if conversation.id in first_line:
            earlier = first_line[conversation.id]
            raise DataFileError(path, f"conversation id {conversation.id!r} already used on line {earlier}", line_no)
        first_line[conversation.id] = line_no
        conversations.append(conversation)
    if not conversations:
        raise DataFileError(path, "empty file: no conversations")
    return conversations


def parse_line(path: Path | str, line_no: int, line: str) -> Conversation:
    """One JSONL line as a Conversation (its id defaults to `line<N>`); DataFileError otherwise."""
    try:
        record: Any = json.loads(line)
    except json.JSONDecodeError as exc:
        raise DataFileError(path, f"not valid JSON ({exc})", line_no) from None
    if not isinstance(record, dict):
        raise DataFileError(path, f"expected a JSON object, got {type(record).__name__}", line_no)
    try:
        return conversation_of(record, f"line{line_no}")
    except ValueError as exc:
        raise DataFileError(path, str(exc), line_no) from None


def record_of(conversation: Conversation) -> dict[str, Any]:
    """The JSON object written for one conversation (read back by `parse_line`)."""
    record: dict[str, Any] = {"id": conversation.id}
    if conversation.source:
        record["source"] = conversation.source
    record["text_format"] = conversation.text_format
    record["conversations"] = [{"role": t.role, "content": t.content} for t in conversation.turns]
    return record


def write_record(fh: IO[str], conversation: Conversation) -> None:
    """Write one conversation as one JSON line (the caller flushes)."""
    fh.write(json.dumps(record_of(conversation), ensure_ascii=False) + "\n")


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    opener = gzip.open if path.name.endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8") as fh:
            for line_no, line in enumerate(fh, start=1):
                if line.strip():
                    yield line_no, line
    except UnicodeDecodeError as exc:
        raise DataFileError(path, f"not UTF-8 text ({exc.reason})") from None


def conversation_of(record: dict[str, Any], default_id: str) -> Conversation:
    present = [key for key in _TURN_LISTS if key in record]
    if len(present) != 1:
        raise ValueError(f"expected exactly one of {list(_TURN_LISTS)}, got keys {sorted(record)}")
    key = present[0]
    raw = record[key]
    if not isinstance(raw, list) or not raw:
        raise ValueError(f"{key!r} must be a non-empty list of turns")
    turns = [_turn(key, index, item) for index, item in enumerate(raw)]
    system = record.get("system")  # Daring-Anteater keeps the system prompt beside the turns
    if system is not None and not isinstance(system, str):
        raise ValueError(f"'system' must be a string, got {type(system).__name__}")
    if system and turns[0].role != "system":
        turns.insert(0, Turn("system", system))
    text_format = record.get("text_format", "chat")
    if text_format not in TEXT_FORMATS:
        raise ValueError(f"'text_format' must be one of {list(TEXT_FORMATS)}, got {text_format!r}")
    if text_format == "completion" and [t.role for t in turns] != ["user", "assistant"]:
        raise ValueError("a 'completion' record must be one user turn then one assistant turn")
    source = record.get("source", "")
    if not isinstance(source, str):
        raise ValueError(f"'source' must be a string, got {type(source).__name__}")
    return Conversation(_record_id(record, default_id), tuple(turns), text_format, source)


def _turn(key: str, index: int, item: Any) -> Turn:
    where = f"{key}[{index}]"
    if not isinstance(item, dict):
        raise ValueError(f"{where} must be an object, got {type(item).__name__}")
    # Daring-Anteater spells a turn {"from", "value"}; OpenAI {"role", "content"}.
    role_key, content_key = ("from", "value") if "from" in item else ("role", "content")
    for field in (role_key, content_key):
        if field not in item:
            raise ValueError(f"{where} has no {field!r} (keys: {sorted(item)})")
    role, content = item[role_key], _text_of(item[content_key])
    role = ROLE_ALIASES.get(role.lower(), role.lower()) if isinstance(role, str) else role
    if role not in ROLES:
        raise ValueError(f"{where}: unknown role {item[role_key]!r}; expected one of {[*ROLES, *ROLE_ALIASES]}")
    if not isinstance(content, str):
        raise ValueError(f"{where}: {content_key!r} must be a string or a list of text parts, got "
                         f"{type(item[content_key]).__name__}")
    return Turn(role, content)


def _text_of(content: Any) -> Any:
    """An OpenAI content given as parts ([{"type": "text", "text": ...}, ...]): its text parts joined, as vLLM's chat
    template input joins them (a string template sees one string); anything else as it is."""
    if isinstance(content, list) and content and all(isinstance(p, dict) and p.get("type") == "text"
                                                     and isinstance(p.get("text"), str) for p in content):
        return "\n".join(p["text"] for p in content)
    return content


def _record_id(record: dict[str, Any], default_id: str) -> str:
    for key in _ID_KEYS:
        if key in record:
            value = record[key]
            if isinstance(value, bool) or not isinstance(value, (str, int)) or value == "":
                raise ValueError(f"{key!r} must be a non-empty string or an integer, got {value!r}")
            return str(value)
    return default_id
