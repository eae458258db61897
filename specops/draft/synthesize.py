"""Answer training prompts with the served base model, appending JSONL records as they finish.

Resumable: ids already in the output file are skipped, so an interrupted run loses at most
the requests that were in flight.
"""
from __future__ import annotations

import json
import math
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from specops import http_client
from specops.bench.conversations import TEXT_FORMATS, Conversation, DataFileError, Turn, parse_line, write_record
from specops.draft.prompt_sources import PromptItem
from specops.run.progress import Progress

_DEAD_SERVER_PROBE = 10  # this many first requests all failing means nothing will succeed


@dataclass(frozen=True)
class SynthesisResult:
    path: Path
    written: int  # records added by this run
    reused: int  # requested ids already in the file
    empty: int = 0  # written answers that are empty or whitespace
    failed: list[tuple[str, str]] = field(default_factory=list)  # (id, error message)


def synthesize(
    items: Sequence[PromptItem],
    answer: Callable[[str], str],
    out_path: Path,
    *,
    concurrency: int,
    text_format: str,
    log: Callable[[str], None] = print,
    progress: Progress | None = None,
) -> SynthesisResult:
    """Answer every item not yet in `out_path` with `concurrency` requests in flight; append each.
    `progress` hears of every finished request (answered or failed) of this run's share."""
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, got {concurrency}")
    if text_format not in TEXT_FORMATS:
        raise ValueError(f"text_format must be one of {list(TEXT_FORMATS)}, got {text_format!r}")
    _check_unique(items)
    out_path = Path(out_path)
    done = _resume(out_path, text_format, log)
    todo = [item for item in items if item.id not in done]
    reused = len(items) - len(todo)
    if extra := len(done - {item.id for item in items}):
        log(f"{out_path}: {extra} records are not among the requested prompts (kept)")
    log(f"synthesizing {len(todo)} answers ({reused} already in {out_path.name}), concurrency {concurrency}")
    with _Writer(out_path, text_format, len(todo), log, progress) as writer:
        _run(todo, answer, concurrency, writer)
    writer.check_failures()
    log(writer.summary())
    return SynthesisResult(out_path, writer.written, reused, writer.empty, writer.failed)


def openai_answerer(
    base_url: str, model: str, max_tokens: int, timeout_s: float, api_key: str | None = None
) -> Callable[[str], str]:
    """Greedy chat answer from an OpenAI-compatible server's /v1/chat/completions."""
    url = base_url.rstrip("/").removesuffix("/v1") + "/v1/chat/completions"
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    # Loopback servers must never go through a configured HTTP proxy; remote ones may need it.
    http = http_client.Client(env_proxy=not http_client.is_loopback(url))

    def answer(prompt: str) -> str:
        body = {"model": model, "messages": [{"role": "user", "content": prompt}],
                "max_tokens": max_tokens, "temperature": 0}
        try:
            return _chat_content(url, _post(http, url, body, headers, timeout_s))
        except (RuntimeError, TimeoutError) as exc:
            if api_key and api_key in str(exc):  # a server echoing the header must not leak the key
                raise type(exc)(str(exc).replace(api_key, "***")) from None
            raise

    return answer


class EndpointError(RuntimeError):
    """An OpenAI-compatible server refused a request or answered something unusable."""


def _post(http: http_client.Client, url: str, body: dict, headers: dict[str, str], timeout_s: float) -> str:
    try:
        return http.text("POST", url, timeout_s, body=body, headers=headers)
    except http_client.NoAnswer:
        raise  # a TimeoutError naming the URL already
    except http_client.HttpError as exc:
        raise EndpointError(str(exc)) from None


def _chat_content(url: str, text: str) -> str:
    try:
        content = json.loads(text)["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        content = None
    if not isinstance(content, str):
        raise EndpointError(f"{url}: response has no choices[0].message.content: {text[:200]}")
    return content


def _check_unique(items: Sequence[PromptItem]) -> None:
    if repeated := [i for i, n in Counter(item.id for item in items).items() if n > 1]:
        raise ValueError(f"prompt ids repeat: {repeated[:5]}")


def _resume(path: Path, text_format: str, log: Callable[[str], None]) -> set[str]:
    """Ids of the valid records in `path`; a truncated last line is dropped from the file."""
    if not path.exists():
        return set()
    raw = path.read_bytes()
    lines = raw.split(b"\n")  # the last element is what follows the last newline
    kept, ids, cut = _valid_lines(path, lines, text_format)
    if cut:
        log(f"{path}: dropping an incomplete last line left by an interrupted run")
    if raw and not raw.endswith(b"\n"):  # appending must start on a fresh line
        path.write_bytes(b"".join(line + b"\n" for line in kept))
    return ids


def _valid_lines(path: Path, lines: list[bytes], text_format: str) -> tuple[list[bytes], set[str], bool]:
    """Non-blank lines and their ids, and whether an unterminated last line was cut off."""
    kept: list[bytes] = []
    ids: set[str] = set()
    for index, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            record = parse_line(path, index + 1, line.decode("utf-8"))
        except (DataFileError, UnicodeDecodeError) as exc:
            if index == len(lines) - 1:  # a write is cut before its newline: only here
                return kept, ids, True
            if isinstance(exc, UnicodeDecodeError):
                raise DataFileError(path, f"not UTF-8 text ({exc.reason})", index + 1) from None
            raise
        if record.text_format != text_format:
            raise DataFileError(path, f"record {record.id!r} is {record.text_format!r} but this run "
                                f"writes {text_format!r}: use another output file", index + 1)
        if record.id in ids:
            raise DataFileError(path, f"record id {record.id!r} repeats", index + 1)
        ids.add(record.id)
        kept.append(line)
    return kept, ids, False


def _run(todo: list[PromptItem], answer: Callable[[str], str], concurrency: int, writer: _Writer) -> None:
    # A bounded window of futures: memory stays flat for any number of prompts, and an
    # interruption abandons only what is in flight.
    pending: dict[Future, PromptItem] = {}
    queue = iter(todo)
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="synthesize") as pool:
        try:
            while True:
                for item in queue:
                    pending[pool.submit(answer, item.text)] = item
                    if len(pending) >= 2 * concurrency:
                        break
                if not pending:
                    return
                finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in finished:
                    writer.finish(pending.pop(future), future)
                writer.check_failures()
        finally:
            for future in pending:
                future.cancel()


class _Writer:
    """The one writer of the output file: appends and flushes each answer, counts, logs progress."""

    def __init__(self, path: Path, text_format: str, total: int, log: Callable[[str], None],
                 progress: Progress | None = None):
        self.path, self.text_format, self.total, self.log, self.progress = path, text_format, total, log, progress
        self.written = self.empty = 0
        self.failed: list[tuple[str, str]] = []
        self._started = time.monotonic()
        self._every = max(1, min(math.ceil(total / 10), 100))
        self._fh: IO[str] | None = None

    def __enter__(self) -> _Writer:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = self.path.open("a", encoding="utf-8")
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._fh is not None:
            self._fh.close()

    @property
    def attempted(self) -> int:
        return self.written + len(self.failed)

    def finish(self, item: PromptItem, future: Future) -> None:
        """Record one finished request: its answer appended to the file, or its error."""
        error = future.exception()
        if error is not None:
            self.failed.append((item.id, f"{type(error).__name__}: {error}"))
        else:
            self._append(item, future.result())
        if self.attempted % self._every == 0 or self.attempted == self.total:
            self.log(self._progress())
        if self.progress is not None:
            self.progress(self.attempted / self.total, f"{self.attempted}/{self.total} answered "
                                                       f"({len(self.failed)} failed)")

    def check_failures(self) -> None:
        """Stop early once failures decide the outcome, or when the first requests all failed."""
        fails = len(self.failed)
        if fails * 2 > self.total or fails == self.attempted >= min(_DEAD_SERVER_PROBE, self.total + 1):
            raise RuntimeError(
                f"{fails} of {self.attempted} requests failed (of {self.total}); first: {self.failed[0][1]}")

    def summary(self) -> str:
        """One line: what this run added, and what went wrong."""
        parts = [f"synthesized {self.written} answers into {self.path}"]
        if self.empty:
            parts.append(f"{self.empty} empty")
        if self.failed:
            parts.append(f"{len(self.failed)} failed (first: {self.failed[0][1]})")
        return "; ".join(parts)

    def _append(self, item: PromptItem, text: str) -> None:
        turns = (Turn("user", item.text), Turn("assistant", text))
        assert self._fh is not None, "_Writer used outside its with block"
        write_record(self._fh, Conversation(item.id, turns, self.text_format, item.source))
        self._fh.flush()  # on disk now: an interruption later cannot lose this answer
        self.written += 1
        self.empty += not text.strip()

    def _progress(self) -> str:
        elapsed = time.monotonic() - self._started
        rate = self.attempted / elapsed if elapsed > 0 else 0.0
        eta = (self.total - self.attempted) / rate if rate > 0 else float("inf")
        return (f"{self.attempted}/{self.total} answered ({len(self.failed)} failed), "
                f"{rate:.2f}/s, ETA {_duration(eta)}")


def _duration(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "?"
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes // 60}h{minutes % 60:02d}m" if minutes >= 60 else f"{minutes}m{secs:02d}s"
