"""Regenerate specops/versions/data/images.yaml: which framework versions each NGC image ships.

Reads git mirrors of triton-inference-server/server and triton-inference-server/tensorrtllm_backend
(bare repositories, e.g. the ones the search tool's `fetch` brings to /work/.mirror/...):

  Triton version             server@r<YY.MM>:TRITON_VERSION
  vLLM / TensorRT-LLM        server@<newest r-branch>:docs/introduction/compatibility.md, NVIDIA's
                             release compatibility matrix (one row per NGC tag); NVIDIA builds such as
                             0.11.1+9114fd76.nv25.12 are recorded with their public version 0.11.1
  cross-check ("recipe")     server@r<YY.MM>:build.py vllm_version and tensorrtllm_backend@r<YY.MM>:
                             dockerfile/Dockerfile.triton.trt_llm_backend TENSORRTLLM_VER, the build
                             recipes; where they disagree with the matrix the row says so

Rows neither source answers are kept from the existing file, where they were filled by hand with
their evidence, and never invented here.

    python tools/versions/extract_images.py --server <mirror> --backend <mirror> [--out PATH]
"""
from __future__ import annotations

import argparse
import re
import subprocess
from pathlib import Path

import yaml

OUT = Path(__file__).resolve().parents[2] / "specops" / "versions" / "data" / "images.yaml"
SERVER = "triton-inference-server/server"
BACKEND = "triton-inference-server/tensorrtllm_backend"


def git_show(repo: Path, ref: str, path: str) -> str | None:
    proc = subprocess.run(["git", "-C", str(repo), "show", f"{ref}:{path}"], capture_output=True, text=True)
    return proc.stdout if proc.returncode == 0 else None


def line_of(text: str, pattern: str) -> tuple[int, re.Match] | None:
    for number, line in enumerate(text.splitlines(), 1):
        if match := re.search(pattern, line):
            return number, match
    return None


def releases(repo: Path) -> list[str]:
    argv = ["git", "-C", str(repo), "branch", "--list", "r2[5-9].[0-9][0-9]", "--format=%(refname:short)"]
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout.split()
    return sorted(b[1:] for b in out)


COMPAT = "docs/introduction/compatibility.md"
# Section heading of the matrix -> (framework, column holding its version).
SECTIONS = {"trtllm-python-py3": ("tensorrt-llm", "TensorRT-LLM version"), "vllm-python-py3": ("vllm", "vLLM version")}


def matrix(repo: Path, ref: str) -> dict[str, dict[str, dict]]:
    """framework -> release -> {version, build, source} from the compatibility matrix at `ref`."""
    text = git_show(repo, ref, COMPAT) or ""
    out: dict[str, dict[str, dict]] = {}
    section, column = None, None
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("## Container Name:"):
            section = SECTIONS.get(line.split(":", 1)[1].strip())
            column = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if section is None or len(cells) < 3:
            continue
        if column is None and section[1] in cells:
            column = cells.index(section[1])
        elif column is not None and re.fullmatch(r"\d{2}\.\d{2}", cells[0]):
            build = cells[column]
            public = re.match(r"[0-9][0-9a-z.]*?(?=\+|$)", build)
            out.setdefault(section[0], {})[cells[0]] = {
                "version": public[0] if public else build, "build": build,
                "source": f"{SERVER}@{ref}:{COMPAT}:{number}"}
    return out


def recipe(server: Path, backend: Path, release: str) -> dict[str, dict]:
    """The build recipes' versions for one release, to cross-check the matrix."""
    ref, out = f"r{release}", {}
    if found := line_of(git_show(server, ref, "build.py") or "", r'"vllm_version":\s*"([^"]+)"'):
        out["vllm"] = {"version": found[1][1], "source": f"{SERVER}@{ref}:build.py:{found[0]}"}
    path = "dockerfile/Dockerfile.triton.trt_llm_backend"
    text = git_show(backend, ref, path) or ""
    if found := line_of(text, r"^ARG TENSORRTLLM_VER=(\S+)"):
        out["tensorrt-llm"] = {"version": found[1][1], "source": f"{BACKEND}@{ref}:{path}:{found[0]}"}
        if tag := line_of(text, r"^ARG TENSORRTLLM_REPO_TAG=(\S+)"):
            out["tensorrt-llm"]["models_from"] = f"NVIDIA/TensorRT-LLM@{tag[1][1]}:triton_backend"
    return out


def framework_row(listed: dict | None, built: dict | None, kept: dict | None) -> dict | None:
    if listed is None:
        return kept
    row = {"version": listed["version"], "source": listed["source"]}
    if listed["build"] != listed["version"]:
        row["build"] = listed["build"]
    if built is not None:
        if built.get("models_from"):
            row["models_from"] = built["models_from"]
        if built["version"] != listed["version"]:
            row["recipe"] = {"version": built["version"], "source": built["source"],
                             "note": "the build recipe names another version than NVIDIA's matrix; the matrix wins"}
    elif kept and kept.get("models_from"):
        row["models_from"] = kept["models_from"]
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", type=Path, required=True)
    parser.add_argument("--backend", type=Path, required=True)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    doc = yaml.safe_load(args.out.read_text()) if args.out.exists() else {}
    table = doc.setdefault("tritonserver", {}).setdefault("releases", {})
    names = releases(args.server)
    listed = matrix(args.server, f"r{names[-1]}")
    for release in names:
        row = table.setdefault(release, {})
        if version := git_show(args.server, f"r{release}", "TRITON_VERSION"):
            row["triton"] = {"version": version.strip(), "source": f"{SERVER}@r{release}:TRITON_VERSION"}
        built = recipe(args.server, args.backend, release)
        for framework in ("vllm", "tensorrt-llm"):
            value = framework_row(listed.get(framework, {}).get(release), built.get(framework), row.get(framework))
            if value is not None:
                row[framework] = value
    args.out.write_text(yaml.safe_dump(doc, sort_keys=False, width=120))
    print(f"wrote {args.out}: {len(table)} tritonserver releases")


if __name__ == "__main__":
    main()
