"""`specops profiles`: shipped profiles and the method x backend matrix."""
from __future__ import annotations

from specops.backends import BACKENDS, needs_gpu
from specops.methods import METHODS
from specops.profile.errors import ProfileError
from specops.profile.loader import list_profile_names, load_profile


def matrix_lines() -> list[str]:
    backends = BACKENDS.names()
    width = max(len(m) for m in METHODS.names()) + 2
    lines = ["method".ljust(width) + "  ".join(backends)]
    for method in METHODS.names():
        cells = [("yes" if BACKENDS.get(b).supports(method) else "-").ljust(len(b)) for b in backends]
        lines.append(method.ljust(width) + "  ".join(cells) + f"  {METHODS.get(method).summary}")
    return lines


FRAMEWORK_NAMES = {"vllm": "vLLM", "tensorrt-llm": "TensorRT-LLM"}


def gpu_profile_table() -> list[str]:
    """Markdown rows: each GPU profile's image and the versions inside it (the docs' reference shows it)."""
    lines = ["| profile | backend | image | Triton | framework in the image |", "|---|---|---|---|---|"]
    for name in list_profile_names():
        backend = load_profile(name).profile.backend
        if not needs_gpu(backend):
            continue
        info = backend.image_info()
        triton = info.pins["triton"].version if info and "triton" in info.pins else "-"
        framework = f"{FRAMEWORK_NAMES[backend.framework]} {backend.release()}"
        lines.append(f"| `{name}` | `{backend.kind}` | `{backend.image.rsplit('/', 1)[-1]}` | {triton} | {framework} |")
    return lines


def format_catalog() -> str:
    lines = ["profiles:"]
    for name in list_profile_names():
        try:
            p = load_profile(name).profile
            lines.append(f"  {name:<27} {p.method.kind:<13} {p.backend.kind:<14} {p.description}")
        except ProfileError as err:
            lines.append(f"  {name:<28} INVALID: {err}")
    lines += ["", "method x backend:"] + [f"  {line}" for line in matrix_lines()]
    lines += ["", "GPU profiles: image -> versions inside it:"] + [f"  {line}" for line in gpu_profile_table()]
    return "\n".join(lines)
