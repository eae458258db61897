"""A replay of recorded traffic: what n-gram and suffix decoding would have accepted on requests already answered.

Both draft from the prompt and the output alone, so a request log that holds the answers the target gave is all a
replay needs: no generation, no server. A line of the log is one answered request:

    {"messages": [..., {"role": "assistant", "content": ANSWER}], "category"?}   an OpenAI chat log's line
    {"conversations": [..., {"from": "gpt", "value": ANSWER}]}                  ShareGPT, the answer last
    {"prompt": TEXT, "response" | "completion" | "output": ANSWER, "category"?}  a completion and its answer

A chat line is rendered through the target's chat template (the messages before the answer, with the generation
prompt, as vLLM's chat endpoint renders them) and a completion line tokenized as text; the answer is tokenized with
the target's tokenizer, without special tokens. What it predicts, and what it cannot know:
- the lengths are the log's: each request is replayed to its answer's end, and drafts past that end are not counted
  (nothing in the log says what the target would have said next; the engine counts what it accepts there);
- an answer sampled at temperature > 0 is taken as the truth drafts are checked against. vLLM's rejection sampler
  accepts a draft token that has no probabilities of its own (n-gram, suffix) with the target's probability of that
  token, not by equality (vllm/v1/sample/rejection_sampler.py at 0.32.0: the no-draft-probs path of
  rejection_random_sample_kernel takes draft_prob = 1, and accepts where target_prob / draft_prob >= uniform), so
  the served acceptance then runs below what the log replays, the more so the higher the temperature; at
  temperature 0 (greedy) the two agree.
"""
from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specops.bench.conversations import conversation_of
from specops.bench.prompts import chat_messages
from specops.bench.sampling import Workload

ANSWER_KEYS = ("response", "completion", "output", "answer")


class TrafficFileError(ValueError):
    """A traffic log line that holds no answered request: names the file and the line."""

    def __init__(self, path: Path, line_no: int | None, reason: str):
        super().__init__(f"{path}" + (f":{line_no}" if line_no else "") + f": {reason}")
        self.path, self.line_no, self.reason = path, line_no, reason


@dataclass(frozen=True)
class Answered:
    """One request of the log and the answer the target gave it."""

    messages: list[dict[str, str]] | None  # a chat request's messages before the answer (None: a completion)
    prompt: str | None  # a completion's text
    answer: str
    category: str | None
    line: int


def read_traffic(path: Path) -> list[Answered]:
    """Every answered request of a .jsonl / .jsonl.gz log; TrafficFileError names the line of one without an answer
    (missing or empty) or in no accepted format."""
    path = Path(path)
    if not path.is_file():
        raise TrafficFileError(path, None, "file not found")
    opener = gzip.open if path.name.endswith(".gz") else open
    out = []
    with opener(path, "rt", encoding="utf-8") as fh:
        for line_no, line in enumerate(fh, start=1):
            if line.strip():
                out.append(_answered(path, line_no, line))
    if not out:
        raise TrafficFileError(path, None, "no requests in the log")
    return out


def _answered(path: Path, line_no: int, line: str) -> Answered:
    try:
        record: Any = json.loads(line)
    except json.JSONDecodeError as exc:
        raise TrafficFileError(path, line_no, f"not valid JSON ({exc.msg})") from None
    if not isinstance(record, dict):
        raise TrafficFileError(path, line_no, f"expected a JSON object, got {type(record).__name__}")
    category = record.get("category")
    if category is not None and (not isinstance(category, str) or not category.strip()):
        raise TrafficFileError(path, line_no, f"'category' must be a non-empty string, got {category!r}")
    if "messages" in record or "conversations" in record:
        try:
            turns = conversation_of(record, f"line{line_no}").turns
        except ValueError as err:
            raise TrafficFileError(path, line_no, str(err)) from None
        if turns[-1].role != "assistant":
            raise TrafficFileError(path, line_no, "no answer: the conversation's last message is not the "
                                   f"assistant's (it is {turns[-1].role!r})")
        if len(turns) < 2:
            raise TrafficFileError(path, line_no, "an answer without the request it answers")
        answer = _text(path, line_no, "the assistant's answer", turns[-1].content)
        return Answered([{"role": t.role, "content": t.content} for t in turns[:-1]], None, answer, category, line_no)
    if "prompt" not in record:
        raise TrafficFileError(path, line_no, f"expected 'messages', 'conversations' or 'prompt' with one of "
                               f"{list(ANSWER_KEYS)}, got {sorted(record)}")
    found = [k for k in ANSWER_KEYS if k in record]
    if not found:
        raise TrafficFileError(path, line_no, f"no answer: a prompt needs one of {list(ANSWER_KEYS)}")
    prompt = _text(path, line_no, "'prompt'", record["prompt"])
    return Answered(None, prompt, _text(path, line_no, f"{found[0]!r}", record[found[0]]), category, line_no)


def _text(path: Path, line_no: int, what: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise TrafficFileError(path, line_no, f"{what} is empty or not a string")
    return value


def traffic_lines(workload: Workload, answers: dict[int, str]) -> list[dict[str, Any]]:
    """A run's answered requests as a log `read_traffic` reads (each prompt as the benchmark sent it, its answer and
    its category): what `specops replay --traffic` replays, and a record of what the served target said."""
    lines = []
    for index in sorted(answers):
        prompt = workload.prompts[index]
        line: dict[str, Any] = ({"messages": [*chat_messages(prompt), {"role": "assistant", "content": answers[index]}]}
                                if workload.chat else {"prompt": prompt.strip(), "response": answers[index]})
        if workload.categories[index] is not None:
            line["category"] = workload.categories[index]
        lines.append(line)
    return lines


def worker_requests(records: list[Answered]) -> list[dict]:
    """What the vLLM venv's worker tokenizes: each request's messages (or text) and its answer."""
    return [{"messages": r.messages, "prompt": r.prompt, "answer": r.answer} for r in records]
