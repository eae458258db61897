"""What genai-perf 0.0.16 will send, from its own input generator, without a server.

genai-perf writes every request it will send into `<artifact dir>/inputs.json` before it starts
perf_analyzer. This runs exactly that part of `genai-perf profile` (argument parsing, config,
tokenizer, input conversion) in a child process for a specops command line, so the request
fields can be checked against the inputs the served model declares and reads at its version.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from specops.bench.genai_perf import GenaiPerfRequest, build_command

# The part of genai_perf.subcommand.profile.Profile.profile() before perf_analyzer runs.
_GENERATE = """
import sys
from genai_perf import parser
from genai_perf.config.input.create_config import CreateConfig
from genai_perf.subcommand.profile import Profile
sys.argv = ["genai-perf", *sys.argv[1:]]
args, extra = parser.parse_args()
config = CreateConfig.create(args, extra)
profile = Profile(config, extra)
pa_config = profile._create_perf_analyzer_config(profile._create_objectives_based_on_stimulus())
profile._create_tokenizer()
profile._create_artifact_directory(pa_config)
profile._generate_inputs(pa_config)
print(pa_config.get_artifact_directory())
"""


def payloads(req: GenaiPerfRequest, timeout_s: float = 180.0) -> list[dict[str, Any]]:
    """The request bodies genai-perf would send for `req` (one per input row, "model" included)."""
    with tempfile.TemporaryDirectory(prefix="specops-genai-perf-inputs-") as tmp:
        local = {"artifact_dir": Path(tmp) / "out", "input_file": Path(req.input_file).resolve()}
        if Path(req.tokenizer).exists():
            local["tokenizer"] = Path(req.tokenizer).resolve()
        argv = build_command(GenaiPerfRequest(**{**req.__dict__, **local}))[1:]
        env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
        proc = subprocess.run([sys.executable, "-c", _GENERATE, *argv], capture_output=True, text=True,
                              timeout=timeout_s, env=env, cwd=tmp)
        if proc.returncode != 0:
            raise RuntimeError(f"genai-perf input generation failed:\n{proc.stderr[-2000:]}")
        artifact_dir = Path(proc.stdout.strip().splitlines()[-1])
        return json.loads((artifact_dir / "inputs.json").read_text())["data"]


def requests(bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each request as field -> value: KServe bodies are input tensors (values in one-element lists;
    "model" selects the model, it is no input), OpenAI bodies carry their JSON under "payload"."""
    out = []
    for body in bodies:
        if "payload" in body:
            out += [dict(p) for p in body["payload"]]
        else:
            out.append({k: v[0] if isinstance(v, list) and len(v) == 1 else v for k, v in body.items() if k != "model"})
    return out
