"""`specops plan` lines for the GPU sections: every container command, the recipe, where each setting came from."""
from __future__ import annotations

from specops.draft.gpu import VLLM_KEY_ENV, modelopt_facts
from specops.draft.gpu_recipe import (
    EXPORT,
    OUT_IN,
    RECIPE,
    health_url,
    recipe_yaml,
    served_name,
    synthesis_container,
    training_container,
)
from specops.draft.spec import DataSpec, TrainSpec
from specops.draft.store import DATA_FILE
from specops.launch.describe import describe_line

FREE_PORT = "<free port>"
TARGET = "<target checkpoint from the download step>"


def synthesis_commands(data: DataSpec, profile: str, target_source: str, host: str, cache: str) -> list[str]:
    """The vLLM container, its readiness probe, the requests the synthesizer sends, the teardown."""
    server = data.server
    spec = synthesis_container(server, profile, TARGET, target_source, host, FREE_PORT)
    sources = ", ".join(data.prompts + ([data.conversations] if data.conversations else []))
    return [
        f"{server.image} ships vLLM {server.vllm_version()} (specops' image matrix)",
        describe_line(spec),
        f"ready: GET {health_url(host, FREE_PORT)}",
        f"{data.num_samples} prompts ({sources}) -> POST http://{host}:{FREE_PORT}/v1/chat/completions "
        f"(model {served_name(target_source)}, temperature 0, max_tokens {data.max_tokens}, {data.concurrency} in "
        f"flight; Authorization: Bearer ${VLLM_KEY_ENV} when set: the container reads the same variable, so the key "
        "is on no command line) -> "
        f"{cache}/train-data/<key>/{DATA_FILE} (resumable)",
        "stop the container (SIGTERM, SIGKILL after serving.stop_timeout_s), logs into the run directory",
    ]


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
