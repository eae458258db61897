"""Servers are started and stopped in one place (flows/serving.py and the tasks and core it calls), so every
pipeline server is registered, recorded, timed and torn down the same way."""
from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
SOURCES = ("specops", "flows", "tasks")

# The seam: the context manager, the Prefect tasks it calls, the Prefect-free start and stop they run.
SEAM = {"flows/serving.py", "tasks/serve.py", "specops/pipeline/render.py"}
SEAM_NAMES = {"start_server", "stop_server", "start_variant", "stop_variant"}
# What the seam calls: each backend's launch() starts its own processes or containers (and stops them when they
# never get ready), through the launchers and process wrappers below it.
LAUNCH_ALLOWED = ("specops/backends/",)
STOP_ALLOWED = (
    "specops/backends/",  # a backend's servers and their launch() clean-up
    "specops/launch/",  # the Docker launcher stops its containers
    "specops/triton/",  # the tritonserver process wrapper
    "specops/pipeline/janitor.py",  # reaps what a dead run left, by record rather than by server
    "specops/cost/meter.py",  # a cost meter's sampler, not a server
)


def violations(rel: str, source: str) -> list[str]:
    """Where `rel` starts or stops a server outside the seam."""
    if rel in SEAM:
        return []
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            attr = node.func.attr
            if attr == "launch" and not rel.startswith(LAUNCH_ALLOWED):
                found.append(f"{rel}:{node.lineno} calls .launch(")
            elif attr == "stop" and not rel.startswith(STOP_ALLOWED):
                found.append(f"{rel}:{node.lineno} calls .stop(")
        names = {alias.name for alias in node.names} if isinstance(node, ast.ImportFrom) else set()
        if isinstance(node, ast.Name | ast.Attribute):
            names.add(node.id if isinstance(node, ast.Name) else node.attr)
        found += [f"{rel}:{node.lineno} uses {name}" for name in sorted(names & SEAM_NAMES)]
    return found


def test_no_server_is_started_or_stopped_outside_the_seam():
    found = []
    for top in SOURCES:
        for path in sorted((REPO / top).rglob("*.py")):
            rel = path.relative_to(REPO).as_posix()
            found += violations(rel, path.read_text(encoding="utf-8"))
    assert not found, "serve through flows.serving.served instead:\n" + "\n".join(found)


def test_the_check_sees_a_second_way_to_serve():
    second_way = ("from tasks.serve import start_server, stop_server\n"
                  "server = backend.launch(variant, repo, log)\n"
                  "server.stop(5)\n")
    assert violations("flows/other.py", second_way) == [
        "flows/other.py:1 uses start_server", "flows/other.py:1 uses stop_server",
        "flows/other.py:2 calls .launch(", "flows/other.py:3 calls .stop("]
    assert violations("specops/backends/vllm/backend.py", "server = super().launch(variant, repo, log)\n") == []
    assert violations("flows/serving.py", second_way) == []
