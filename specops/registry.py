"""A name -> entry registry whose lookup errors list what exists.

Heavy entries may be registered lazily as "module:attr" strings so that importing the
registry (e.g. to validate a profile) never imports torch or docker.
"""
from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Generic, TypeVar

T = TypeVar("T")


class UnknownName(KeyError):
    def __init__(self, kind: str, name: str, known: list[str]):
        self.kind, self.name, self.known = kind, name, known
        super().__init__(f"unknown {kind} {name!r}; allowed: {', '.join(known)}")

    def __str__(self) -> str:  # KeyError would quote the whole message
        return self.args[0]


class Registry(Generic[T]):
    def __init__(self, kind: str):
        self.kind = kind
        self._entries: dict[str, T | str] = {}

    def register(self, name: str, entry: T | str) -> None:
        if name in self._entries:
            raise ValueError(f"{self.kind} {name!r} is already registered")
        self._entries[name] = entry

    def get(self, name: str) -> T:
        if name not in self._entries:
            raise UnknownName(self.kind, name, self.names())
        entry = self._entries[name]
        if isinstance(entry, str):
            module, _, attr = entry.partition(":")
            entry = getattr(importlib.import_module(module), attr)
            self._entries[name] = entry
        return entry  # type: ignore[return-value]

    def names(self) -> list[str]:
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())
