"""The served engine's own config, read back and held against the engine args specops rendered.

vLLM can take a setting and run without it, saying so only in a warning (on CPU, `async_scheduling`
is forced off: vllm/platforms/cpu.py:331 at 0.32.0). Every rendered key is looked up in what the engine
reports it runs with; a key found with another value is a finding, and the run stops at serve.

Two sources: vLLM's OpenAI server answers GET /server_info?config_format=json with the whole VllmConfig
(vllm/entrypoints/serve/dev/server_info/api_router.py, mounted only with VLLM_SERVER_DEV_MODE=1);
under Triton's vllm_backend only the engine's start-up line is there to read ("Initializing a V1 LLM
engine (v0.32.0) with config: model=..., speculative_config=SpeculativeConfig(method=..., ...,
num_spec_tokens=N), ..., dtype=torch.float32, max_seq_len=..., enforce_eager=..."), vllm/v1/engine/core.py.
"""
from __future__ import annotations

import ast
import re
from typing import Any

# Engine arg -> the name the engine's start-up line prints it under (others print as the engine arg).
_LINE_NAMES = {"max_model_len": "max_seq_len", "num_speculative_tokens": "num_spec_tokens"}
_LINE = re.compile(r"Initializing a V1 LLM engine \(v[^)]*\) with config: (?P<config>.*)$", re.MULTILINE)
_SPEC = re.compile(r"speculative_config=SpeculativeConfig\((?P<spec>[^)]*)\)")
_SCALAR = re.compile(r"(?:^|, )(?P<key>\w+)=(?P<value>'[^']*'|[^,()]+)")
# A nested value (SomeConfig(...), {...}, [...]): its inner fields are not the engine's top-level ones.
_NESTED = re.compile(r"\w+\([^()]*\)|\{[^{}]*\}|\[[^\[\]]*\]")


class ServedConfigError(RuntimeError):
    """The engine runs with other settings than specops rendered."""


def findings(rendered: dict[str, Any], served: dict[str, Any]) -> list[str]:
    """One line per rendered key the served config holds with another value; keys it does not show pass."""
    out = []
    for key, value in rendered.items():
        if key == "model":
            continue
        if isinstance(value, dict):
            section = served.get(key)
            if isinstance(section, dict):
                out += [f"{key}.{line}" for line in findings(value, section)]
            elif key in served:  # e.g. speculation rendered, and the engine runs with speculative_config=None
                out.append(f"{key}: rendered {value!r}, the engine runs {section!r}")
            continue
        seen = _lookup(served, key)
        if seen and not any(_same(value, v) for v in seen):
            out.append(f"{key}: rendered {value!r}, the engine runs {seen[0]!r}")
    return out


def unseen(rendered: dict[str, Any], served: dict[str, Any]) -> list[str]:
    """Rendered keys the served config does not show (nothing to hold them against)."""
    out = []
    for key, value in rendered.items():
        if key == "model":
            continue
        if isinstance(value, dict) and isinstance(served.get(key), dict):
            out += [f"{key}.{k}" for k in unseen(value, served[key])]
        elif not isinstance(value, dict) and not _lookup(served, key):
            out.append(key)
    return out


def from_server_info(info: dict[str, Any]) -> dict[str, Any]:
    """The VllmConfig of /server_info?config_format=json, as a dict of sections."""
    config = info.get("vllm_config")
    if not isinstance(config, dict):
        raise ValueError("GET /server_info carried no vllm_config object (not config_format=json?)")
    return config


def from_engine_log(text: str) -> dict[str, Any] | None:
    """What the engine's last start-up line says it runs with; None when the log has no such line."""
    found = list(_LINE.finditer(text))
    if not found:
        return None
    line = found[-1]["config"]
    spec = _SPEC.search(line)
    served: dict[str, Any] = {"speculative_config": _scalars(spec["spec"]) if spec else None}
    rest, inner = _SPEC.sub("", line), []
    while groups := _NESTED.findall(rest):  # innermost first, until none is left
        inner += groups
        rest = _NESTED.sub("<nested>", rest)
    served |= _scalars(rest)
    # Fields of nested configs (ObservabilityConfig(...)) count where no top-level field has their name.
    for group in inner:
        for key, value in _scalars(group[group.find("(") + 1:-1]).items():
            served.setdefault(key, value)
    return served


def _scalars(text: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for m in _SCALAR.finditer(text):
        out.setdefault(m["key"], _literal(m["value"].strip()))
    for arg, printed in _LINE_NAMES.items():
        if printed in out:
            out.setdefault(arg, out[printed])
    return out


def _literal(text: str) -> Any:
    """A printed value as Python reads it ('quoted', True, None, 4, 0.9); anything else (torch.float32) as text."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _lookup(served: dict[str, Any], key: str) -> list[Any]:
    """Every value `key` has at the top of the served config or in one of its sections (engine args map to
    same-named fields; a name in several sections matches if any of them holds the rendered value)."""
    found = [served[key]] if key in served and not isinstance(served[key], dict) else []
    return found + [section[key] for section in served.values()
                    if isinstance(section, dict) and key in section and not isinstance(section[key], dict)]


def _same(asked: Any, seen: Any) -> bool:
    if isinstance(asked, bool) or isinstance(seen, bool):
        return asked is seen or (isinstance(seen, str) and seen.lower() == str(asked).lower())
    if isinstance(asked, int | float) and isinstance(seen, int | float):
        return float(asked) == float(seen)
    return str(asked).removeprefix("torch.") == str(seen).removeprefix("torch.")
