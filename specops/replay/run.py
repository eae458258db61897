"""A profile's replay: the target's greedy outputs on its benchmark prompts (cached), then the grid simulated over
them, both in the vLLM venv (worker.py), where the engines' own proposers live."""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path

from specops.backends.vllm import cpu as vllm_cpu
from specops.bench.prompts import load_prompts
from specops.profile.errors import ProfileError
from specops.profile.loader import LoadedProfile
from specops.replay.grid import NgramSetting, Prediction, Setting, SuffixSetting
from specops.results.metrics import Predicted
from specops.run.roots import cache_root
from specops.sources.json_entry import read_entry, write_entry
from specops.sources.schemes import fetch

WORKER = Path(__file__).with_name("worker.py")
PROPOSER = {"ngram": "vLLM's n-gram matcher", "suffix": "arctic-inference's suffix trees"}  # worker.PROPOSERS
# Engine args that change which tokens the target picks (or whether it starts); the rest of a served profile's
# (ports, GPU memory) mean nothing offline. Eager unless the profile says otherwise: the served CPU profiles run
# eager, and a compiled start costs ~100 s here (data/vllm_cpu.yaml).
GREEDY_ARGS = ("dtype", "max_model_len", "enforce_eager", "tokenizer_mode", "trust_remote_code")
DEFAULT_MAX_MODEL_LEN = 1 << 30  # no profile limit: the proposers' end-of-context cut never applies
# Greedy tokens generated past each request's end: the truth its last step's drafts are checked against (vLLM
# counts acceptances past max_tokens, worker.replay). The largest draft a method takes (methods/specs.py, le=64).
LOOKAHEAD = 64
Say = Callable[[str], None]


class ReplayError(RuntimeError):
    """The vLLM venv's worker failed; its own error is above on stderr."""


def profile_setting(loaded: LoadedProfile) -> Setting | None:
    """The profile's own setting as vLLM serves it (n-gram prompt_lookup_min unset: vLLM sets it to the max)."""
    m = loaded.profile.method
    if m.kind == "ngram":
        return NgramSetting(min=m.prompt_lookup_min or m.prompt_lookup_max, max=m.prompt_lookup_max,
                            k=m.num_speculative_tokens)
    if m.kind == "suffix":
        return SuffixSetting(depth=m.max_tree_depth, factor=m.max_spec_factor, min_prob=m.min_token_prob,
                             cached=m.max_cached_requests, k=m.num_speculative_tokens)
    return None


def engine_args(loaded: LoadedProfile) -> dict:
    given = getattr(loaded.profile.backend, "engine_args", None) or {}  # vLLM backends have them; others: defaults
    return {"enforce_eager": True, **{k: v for k, v in given.items() if k in GREEDY_ARGS}}


def prompts_of(loaded: LoadedProfile) -> list[str]:
    """The benchmark's prompts, stripped as every tool sends them (bench/prompts.py write_prompts_jsonl)."""
    b = loaded.profile.benchmark
    try:
        return [p.strip() for p in load_prompts(b.prompts, b.num_requests, b.prompt_offset)]
    except (OSError, ValueError) as err:
        raise ProfileError(str(loaded.path), [("benchmark.prompts", str(err))]) from None


def run_worker(request: dict, say: Say) -> dict:
    """worker.py in the vLLM venv, with the environment a vLLM server gets (preloads, CPU settings). The engine runs
    in-process (no spawned core) and logs errors only: progress is the worker's own lines on stderr."""
    venv = vllm_cpu.venv()
    env = venv.environment() | {"VLLM_ENABLE_V1_MULTIPROCESSING": "0", "VLLM_LOGGING_LEVEL": "ERROR"}
    with tempfile.TemporaryDirectory(prefix="specops-replay-") as tmp:
        asked, answer = Path(tmp) / "request.json", Path(tmp) / "result.json"
        asked.write_text(json.dumps(request), encoding="utf-8")
        done = subprocess.run([str(venv.python), str(WORKER), str(asked), str(answer)], env=env,
                              stdout=subprocess.DEVNULL, stderr=sys.stderr, check=False)
        if done.returncode != 0 or not answer.is_file():
            raise ReplayError(f"the replay's {request['mode']} step in {venv.root} exited {done.returncode}")
        result = json.loads(answer.read_text(encoding="utf-8"))
    say(f"replay: {request['mode']} took {result['seconds']:.1f}s")
    return result


def greedy_outputs(loaded: LoadedProfile, say: Say) -> list[dict]:
    """Prompt and greedy output token ids per prompt (the benchmark's output length plus LOOKAHEAD), cached per
    (target, prompts, output length, engine args): greedy decoding is deterministic, so a second replay of the
    same benchmark only simulates."""
    target = fetch(loaded.profile.target.source, cache_root(), log=lambda m: None)
    key = {"target": target.sha256, "prompts": prompts_of(loaded),
           "output_tokens": loaded.profile.benchmark.output_tokens, "lookahead": LOOKAHEAD,
           "engine_args": engine_args(loaded), "vllm": vllm_cpu.version(), "api": "completions, no chat template"}
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:20]
    path = cache_root() / "replay" / f"greedy-{digest}.json"
    if (cached := read_entry(path, partial(greedy_shape, key), say)) is not None:
        say(f"replay: greedy outputs from {path}")
        return cached["sequences"]
    say(f"replay: generating {len(key['prompts'])} x {key['output_tokens']} greedy tokens (+{LOOKAHEAD} past the "
        f"end, what a last step's drafts are checked against) with vLLM {key['vllm']} (offline engine) ...")
    request = {"mode": "generate", "model": str(target.path), "prompts": key["prompts"],
               "output_tokens": key["output_tokens"] + LOOKAHEAD, "engine_args": key["engine_args"]}
    sequences = run_worker(request, say)["sequences"]
    write_entry(path, {"key": key, "sequences": sequences})
    return sequences


def greedy_shape(key: dict, content: dict) -> str | None:
    """What is wrong with a greedy-output entry for `key` (None: nothing): its key, one sequence per prompt, each
    with its prompt's token ids and exactly the output length asked for."""
    if content.get("key") != key:
        return "it was made for another target, prompts, length or engine"
    sequences, length = content.get("sequences"), key["output_tokens"] + key["lookahead"]
    if not isinstance(sequences, list) or len(sequences) != len(key["prompts"]):
        return f"{len(sequences) if isinstance(sequences, list) else 'no'} sequences for {len(key['prompts'])} prompts"
    for i, s in enumerate(sequences):
        if not (isinstance(s, dict) and isinstance(s.get("prompt"), list) and s["prompt"]
                and isinstance(s.get("output"), list) and len(s["output"]) == length):
            return f"sequence {i} is not a prompt's token ids and {length} output token ids"
    return None


def predict(loaded: LoadedProfile, settings: list[Setting], say: Say = print) -> list[Prediction]:
    sequences = greedy_outputs(loaded, say)
    say(f"replay: simulating {len(settings)} settings over {len(sequences)} prompts ...")
    max_len = engine_args(loaded).get("max_model_len", DEFAULT_MAX_MODEL_LEN)
    request = {"mode": "simulate", "sequences": sequences, "max_model_len": max_len,
               "length": loaded.profile.benchmark.output_tokens, "settings": [s.model_dump() for s in settings]}
    results = run_worker(request, say)["results"]
    return [Prediction.of(setting, counts) for setting, counts in zip(settings, results)]


def predicted_for_run(loaded: LoadedProfile, say: Say = print) -> Predicted | None:
    """The replay's figures for the profile's own setting over its benchmark (None: the method has no replay), for
    the run's record beside what the engine counted."""
    setting = profile_setting(loaded)
    if setting is None:
        return None
    (p,) = predict(loaded, [setting], say)
    b = loaded.profile.benchmark
    warm = f"; the engine's count also holds {b.warmup_requests} warm-up request(s), not replayed" \
        if b.warmup_requests else ""
    source = (f"specops replay: {PROPOSER[setting.method]} (vLLM {vllm_cpu.version()}) over the target's greedy "
              f"outputs, {len(p.prompt_tokens_per_step)} prompts x {b.output_tokens} tokens, each request alone{warm}")
    return Predicted(setting=p.label, accepted_per_step=p.per_drafted_step, tokens_per_step=p.tokens_per_step,
                     source=source)
