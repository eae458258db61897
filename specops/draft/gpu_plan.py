"""`specops plan` lines for the GPU sections: every container command, the recipe, where each setting came from."""
from __future__ import annotations

import json
from typing import Any

import yaml

from specops.draft.gpu import SYNTHESIS, VLLM_KEY_ENV, modelopt_facts
from specops.draft.gpu_recipe import EXPORT, OUT_IN, RECIPE, recipe_yaml, training_container
from specops.draft.spec import DataSpec, TrainSpec
from specops.draft.store import DATA_FILE
from specops.launch.describe import describe_line

FREE_PORT = "<free port>"
TARGET = "<target checkpoint from the download step>"


def synthesis_commands(data: DataSpec, backend: Any, cache: str) -> list[str]:
    """What the synthesis server's backend (vllm-serve, see specops/draft/gpu.py) plans - its version, rendered files,
    container and readiness probe - then the requests the synthesizer sends and the teardown."""
    steps = {step.step: step for step in backend.plan(SYNTHESIS, None, None)}
    repo = backend.run_repo(SYNTHESIS)
    rendered = [f"render {repo}/{name.removeprefix('repository/')}: {_one_line(name, text)}"
                for name, text in steps["render"].files.items()]
    sources = ", ".join(data.prompts + ([data.conversations] if data.conversations else []))
    return [
        *steps["version"].commands, *rendered, *steps["serve"].commands,
        f"{data.num_samples} prompts ({sources}) -> POST http://{backend.serving.host}:{FREE_PORT}/v1/chat/completions "
        f"(model {SYNTHESIS.model_name}, temperature 0, max_tokens {data.max_tokens}, {data.concurrency} in "
        f"flight; Authorization: Bearer ${VLLM_KEY_ENV} when set: the container reads the same variable, so the key "
        "is on no command line) -> "
        f"{cache}/train-data/<key>/{DATA_FILE} (resumable)",
        "stop the container (SIGTERM, SIGKILL after serving.stop_timeout_s), logs into the run directory",
    ]


def _one_line(name: str, text: str) -> str:
    if name.endswith(".json"):
        return json.dumps(json.loads(text))
    return "; ".join(f"{k}: {json.dumps(v) if isinstance(v, dict | list) else v}"
                     for k, v in yaml.safe_load(text).items())


def training_step(train: TrainSpec, draft_length: int, profile: str, cache: str) -> tuple[list[str], dict[str, str]]:
    """The training container and the recipe file it reads."""
    facts = modelopt_facts()
    out = f"{cache}/drafts/<key>.partial"
    spec = training_container(train, profile, TARGET, f"{cache}/train-data/<key>", out)
    gpus = train.gpu.gpus
    commands = [
        f"ModelOpt {facts['version']} (as pinned by specops) example trainer; settings mapped from the seed as "
        "specops/draft/data/modelopt.yaml records (its sources: " + facts["sources"]["seed"].split(" ")[0] + ", "
        + facts["sources"]["pinned"].split(" ")[0] + ")",
        f"data parallel: {gpus} GPU{'s' if gpus > 1 else ''}, one accelerate process each "
        f"({facts['launch']['source']}); bf16; "
        + ("torch.compile on (eagle_use_torch_compile)" if train.mode != "medusa" else
           "no torch.compile (ModelOpt's Medusa has none)"),
        describe_line(spec),
    ]
    if train.mode == "medusa":
        commands.append(f"export: the checkpoint's medusa_heads.* tensors -> {out}/{EXPORT} in the Medusa layout "
                        "(config.json + medusa_lm_head.safetensors; ModelOpt 0.47 has no Medusa exporter)")
    commands.append(f"{out} -> {cache}/drafts/<key> (published in one rename; export {OUT_IN}/{EXPORT} is served)")
    recipe = recipe_yaml(train, draft_length, DATA_FILE)
    return commands, {f"{out}/{RECIPE}": recipe}
