"""Incremental detokenization with stop strings, safe for streaming.

Decoding token by token breaks multi-byte characters and byte-level/sentencepiece spaces,
so every push decodes the whole output and emits only the new, settled suffix.
"""
from __future__ import annotations

from collections.abc import Sequence

REPLACEMENT = "\ufffd"  # what a partial UTF-8 sequence decodes to until its last byte arrives


class TextStream:
    """Feeds on the full list of generated ids; returns text deltas that will never change."""

    def __init__(self, tokenizer, stop: Sequence[str] | None = None) -> None:
        self.tokenizer = tokenizer
        self.stop = [s for s in (stop or []) if s]
        # A stop string may be arriving token by token: hold back what could be its start.
        self.hold = max((len(s) for s in self.stop), default=1) - 1
        self.sent = 0
        self.stopped = False

    def push(self, ids: Sequence[int], final: bool = False) -> str:
        """Delta for the output so far; `final` flushes everything held back."""
        if self.stopped:
            return ""
        text = self.tokenizer.decode(
            list(ids), skip_special_tokens=True, clean_up_tokenization_spaces=False
        )
        cut = self._first_stop(text)
        if cut is not None:
            self.stopped = True
            return self._emit(text, cut)
        if final:
            return self._emit(text, len(text))
        settled = len(text.rstrip(REPLACEMENT))
        return self._emit(text, min(settled, len(text) - self.hold))

    def _first_stop(self, text: str) -> int | None:
        # Text already sent never contains a whole stop string (the hold-back guarantees
        # it), so the search can start at the first unsent character's possible stop start.
        begin = max(0, self.sent - self.hold)
        hits = [i for i in (text.find(s, begin) for s in self.stop) if i >= 0]
        return min(hits) if hits else None

    def _emit(self, text: str, end: int) -> str:
        if end <= self.sent:
            return ""
        delta = text[self.sent:end]
        self.sent = end
        return delta
