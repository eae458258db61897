"""What Triton's vllm_backend needs of the vLLM CPU environment that neither side provides.

Installed with a .pth line into the vLLM environment specops builds (specops.backends.vllm.cpu), and
active only in processes whose $SPECOPS_VLLM_BRIDGE names a bridges.json: the Python-backend stub
that runs the backend. That stub starts an isolated interpreter (PyConfig_InitIsolatedConfig), so
PYTHONPATH, PYTHONUTF8 and the locale variables do not reach it; the site-packages .pth does.

- Imports: each bridge says `module` lacks `name`, which this vLLM keeps in `source`. A module that
  no longer exists becomes an alias holding the bridged names; one that exists gets them added after
  it is imported. Nothing is imported before the backend asks for it.
- Locale: the stub runs in the C locale, where open() without an encoding reads ASCII and torch
  inductor's UTF-8 templates fail to load; LC_CTYPE becomes C.UTF-8.

Standalone on purpose: it runs in the vLLM environment, without specops.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import locale
import os
import sys
from pathlib import Path

# Read with os.environ, not specops.settings: this file runs in Triton's stub interpreter in the vLLM venv,
# which cannot import specops (isolated, so PYTHONPATH does not reach it, and specops is not installed there).
ENV = "SPECOPS_VLLM_BRIDGE"


def _fill(module, names: dict[str, str]) -> None:
    for name, source in names.items():
        if not hasattr(module, name):
            setattr(module, name, getattr(importlib.import_module(source), name))


class _Filling(importlib.abc.Loader):
    """Runs the real loader, then adds the bridged names."""

    def __init__(self, real: importlib.abc.Loader, names: dict[str, str]):
        self.real, self.names = real, names

    def create_module(self, spec):
        return self.real.create_module(spec)

    def exec_module(self, module) -> None:
        self.real.exec_module(module)
        _fill(module, self.names)


class _Alias(importlib.abc.Loader):
    """A module vLLM no longer has: an empty one holding the bridged names."""

    def __init__(self, names: dict[str, str]):
        self.names = names

    def create_module(self, spec):
        return None

    def exec_module(self, module) -> None:
        _fill(module, self.names)


class _Finder(importlib.abc.MetaPathFinder):
    def __init__(self, bridges: dict[str, dict[str, str]]):
        self.bridges = bridges

    def find_spec(self, fullname, path, target=None):
        names = self.bridges.get(fullname)
        if names is None:
            return None
        real = importlib.machinery.PathFinder.find_spec(fullname, path)
        if real is None:
            return importlib.util.spec_from_loader(fullname, _Alias(names))
        real.loader = _Filling(real.loader, names)
        return real


def install() -> None:
    table = os.environ.get(ENV)
    if not table or any(isinstance(f, _Finder) for f in sys.meta_path):
        return
    locale.setlocale(locale.LC_CTYPE, "C.UTF-8")
    bridges: dict[str, dict[str, str]] = {}
    for row in json.loads(Path(table).read_text(encoding="utf-8")):
        bridges.setdefault(row["module"], {})[row["name"]] = row["source"]
    sys.meta_path.insert(0, _Finder(bridges))
