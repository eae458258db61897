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
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from specops.bench.genai_perf import GenaiPerfRequest, build_command

# The part of genai_perf.subcommand.profile.Profile.profile() before perf_analyzer runs, for each command line on
# stdin (one interpreter for all: each start costs ~5 s of genai-perf's imports).
_GENERATE = """
import json
import sys
from genai_perf import parser
from genai_perf.config.input.create_config import CreateConfig
from genai_perf.subcommand.profile import Profile
for argv in json.load(sys.stdin):
    sys.argv = ["genai-perf", *argv]
    args, extra = parser.parse_args()
    config = CreateConfig.create(args, extra)
    profile = Profile(config, extra)
    pa_config = profile._create_perf_analyzer_config(profile._create_objectives_based_on_stimulus())
    profile._create_tokenizer()
    profile._create_artifact_directory(pa_config)
    profile._generate_inputs(pa_config)
    print(pa_config.get_artifact_directory(), flush=True)
"""


def payloads(reqs: Sequence[GenaiPerfRequest], timeout_s: float = 300.0) -> list[list[dict[str, Any]]]:
    """Per request, the bodies genai-perf would send for it (one per input row, "model" included)."""
    with tempfile.TemporaryDirectory(prefix="specops-genai-perf-inputs-") as tmp:
        argvs = []
        for i, req in enumerate(reqs):
            local = {"artifact_dir": Path(tmp) / f"out-{i}", "input_file": Path(req.input_file).resolve()}
            if Path(req.tokenizer).exists():
                local["tokenizer"] = Path(req.tokenizer).resolve()
            argvs.append(build_command(GenaiPerfRequest(**{**req.__dict__, **local}))[1:])
        env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
        proc = subprocess.run([sys.executable, "-c", _GENERATE], input=json.dumps(argvs), capture_output=True,
                              text=True, timeout=timeout_s, env=env, cwd=tmp)
        if proc.returncode != 0:
            raise RuntimeError(f"genai-perf input generation failed:\n{proc.stderr[-2000:]}")
        # genai-perf prints too: each artifact directory is the last line of its request's output
        dirs = [line for line in proc.stdout.splitlines() if line.startswith(str(Path(tmp) / "out-"))]
        if len(dirs) != len(reqs):
            raise RuntimeError(f"genai-perf built inputs for {len(dirs)} of {len(reqs)} requests:\n"
                               f"{proc.stdout[-2000:]}")
        return [json.loads((Path(d) / "inputs.json").read_text())["data"] for d in dirs]


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
