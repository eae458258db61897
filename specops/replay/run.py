"""A profile's replay: the target's greedy outputs on its benchmark prompts (cached), then the grid simulated over
them, both in the vLLM venv (worker.py), where the engines' own proposers live."""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from specops.backends.vllm import cpu as vllm_cpu
from specops.bench.sampling import Workload, WorkloadError
from specops.cost.nvml import host_record
from specops.profile.errors import ProfileError
from specops.profile.loader import LoadedProfile
from specops.profile.workload import workload_for
from specops.replay.grid import REPLAYS, Prediction, Setting
from specops.replay.step_cost import CostStore, StepCost, cost_key, observations, predicted_speedup
from specops.replay.traffic import read_traffic, worker_requests
from specops.results.metrics import RequestSample
from specops.results.predicted import Predicted
from specops.settings import cache_root
from specops.sources.fetch import fetch
from specops.sources.json_entry import read_entry, write_entry

WORKER = Path(__file__).with_name("worker.py")
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
    """The profile's own setting as vLLM serves it; None: its method has no replay."""
    m = loaded.profile.method
    return REPLAYS[m.kind][0].of(m) if m.kind in REPLAYS else None


def engine_args(loaded: LoadedProfile) -> dict:
    given = getattr(loaded.profile.backend, "engine_args", None) or {}  # vLLM backends have them; others: defaults
    return {"enforce_eager": True, **{k: v for k, v in given.items() if k in GREEDY_ARGS}}


def workload_of(loaded: LoadedProfile, say: Say = print) -> Workload:
    """The benchmark's workload as a run sends it (a named one fetched); a bad one is named as its field."""
    try:
        return workload_for(loaded.profile, cache_root(), say)
    except WorkloadError as err:
        raise ProfileError(str(loaded.path), [(err.field, err.reason)]) from None
    except (OSError, ValueError) as err:
        raise ProfileError(str(loaded.path), [("benchmark.prompts", str(err))]) from None


def prompts_of(workload: Workload) -> list[str]:
    """The measured prompts, stripped as every tool sends them (bench/prompts.py write_prompts_jsonl)."""
    return [p.strip() for p in workload.measured]


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


def greedy_outputs(loaded: LoadedProfile, say: Say, workload: Workload | None = None) -> list[dict]:
    """Prompt and greedy output token ids per prompt (the benchmark's output length plus LOOKAHEAD), each prompt
    rendered as the benchmark sends it (a chat request through the target's chat template, or raw), cached per
    (target, prompts, rendering, output length, engine args): greedy decoding is deterministic, so a second replay
    of the same benchmark only simulates."""
    workload = workload or workload_of(loaded, say)
    target = fetch(loaded.profile.target.source, cache_root(), log=lambda m: None)
    key = {"target": target.sha256, "prompts": prompts_of(workload),
           "output_tokens": loaded.profile.benchmark.output_tokens, "lookahead": LOOKAHEAD,
           "engine_args": engine_args(loaded), "vllm": vllm_cpu.version(),
           "api": "chat, the target's chat template" if workload.chat else "completions, no chat template"}
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:20]
    path = cache_root() / "replay" / f"greedy-{digest}.json"
    if (cached := read_entry(path, partial(greedy_shape, key), say)) is not None:
        say(f"replay: greedy outputs from {path}")
        return cached["sequences"]
    say(f"replay: generating {len(key['prompts'])} x {key['output_tokens']} greedy tokens (+{LOOKAHEAD} past the "
        f"end, what a last step's drafts are checked against) with vLLM {key['vllm']} (offline engine) ...")
    request = {"mode": "generate", "model": str(target.path), "prompts": key["prompts"], "chat": workload.chat,
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


def predict(loaded: LoadedProfile, settings: list[Setting], say: Say = print, workload: Workload | None = None,
            past_end: bool = True) -> list[Prediction]:
    """The settings replayed over the target's greedy answers to the benchmark's prompts. `past_end` false: drafts
    past each request's end are not counted, as a replay of a recorded log counts them (it has no truth there)."""
    workload = workload or workload_of(loaded, say)
    sequences, length = greedy_outputs(loaded, say, workload), loaded.profile.benchmark.output_tokens
    if not past_end:
        sequences = [{**s, "output": s["output"][:length]} for s in sequences]
    return simulate(loaded, sequences, settings, length, workload.measured_categories, say)


def simulate(loaded: LoadedProfile, sequences: list[dict], settings: list[Setting], length: int | None,
             categories: list[str | None], say: Say) -> list[Prediction]:
    """The settings replayed over the sequences (each request `length` tokens; None: its whole output), with the
    speedup each predicts where this host measured the engine's step cost (replay.step_cost)."""
    say(f"replay: simulating {len(settings)} settings over {len(sequences)} prompts ...")
    max_len = engine_args(loaded).get("max_model_len", DEFAULT_MAX_MODEL_LEN)
    request = {"mode": "simulate", "sequences": sequences, "max_model_len": max_len, "length": length,
               "settings": [s.model_dump() for s in settings]}
    results = run_worker(request, say)["results"]
    cost = step_cost(loaded)
    say(f"replay: {cost.describe()}" if cost else f"replay: {NO_COST}")
    return [with_speedup(Prediction.of(setting, counts, categories), cost, categories)
            for setting, counts in zip(settings, results)]


NO_COST = ("no step cost measured for this engine, target and host yet (a served run of the profile at this "
           "concurrency measures one): no predicted speedup, ranked by tokens per step")


def cost_key_of(loaded: LoadedProfile) -> dict[str, str]:
    target = fetch(loaded.profile.target.source, cache_root(), log=lambda m: None)
    return cost_key(f"vLLM {vllm_cpu.version()}", loaded.profile.method.kind, target.sha256,
                    str(engine_args(loaded).get("dtype", "auto")), host_record().cpu_model,
                    loaded.profile.benchmark.concurrency)


def step_cost(loaded: LoadedProfile) -> StepCost | None:
    """This host's measured step cost for the profile's engine, target, dtype and concurrency (None: none yet)."""
    return CostStore(cache_root()).cost(cost_key_of(loaded))


def with_speedup(p: Prediction, cost: StepCost | None, categories: list[str | None]) -> Prediction:
    if cost is None:
        return p
    by = {name: predicted_speedup(cost, p.prompt_counts, [i for i, c in enumerate(categories) if c == name])
          for name in p.by_category}
    return p.model_copy(update={"speedup": predicted_speedup(cost, p.prompt_counts),
                                "category_speedups": {c: s for c, s in by.items() if s is not None}})


def record_step_cost(loaded: LoadedProfile, spec: list[RequestSample], base: list[RequestSample], run: str,
                     predicted: Predicted | None = None) -> int:
    """A served run's requests into the host's step-cost store (after its own prediction, which used the ones
    before; its replay's steps are the requests' own, where it has one); how many it added."""
    replayed = predicted.prompt_counts if predicted else None
    found = observations(spec, base, run, loaded.profile.benchmark.concurrency, replayed or None)
    CostStore(cache_root()).add(cost_key_of(loaded), found, time.time())
    return len(found)


def predict_traffic(loaded: LoadedProfile, log: Path, settings: list[Setting], say: Say = print) -> list[Prediction]:
    """The settings replayed over a recorded log's requests and answers (specops.replay.traffic), tokenized with the
    target's tokenizer: no generation, each request to its logged answer's end."""
    records = read_traffic(log)
    target = fetch(loaded.profile.target.source, cache_root(), log=lambda m: None)
    say(f"replay: tokenizing {len(records)} recorded requests and answers of {log} with {target.source}'s tokenizer")
    sequences = run_worker({"mode": "tokenize", "model": str(target.path), "records": worker_requests(records)},
                           say)["sequences"]
    return simulate(loaded, sequences, settings, None, [r.category for r in records], say)


def predicted_for_run(loaded: LoadedProfile, workload: Workload | None = None, say: Say = print) -> Predicted | None:
    """The replay's figures for the profile's own setting over its benchmark (None: the method has no replay), for
    the run's record beside what the engine counted."""
    setting = profile_setting(loaded)
    if setting is None:
        return None
    (p,) = predict(loaded, [setting], say, workload)
    b = loaded.profile.benchmark
    warm = f"; the engine's count also holds {b.warmup_requests} warm-up request(s), not replayed" \
        if b.warmup_requests else ""
    source = (f"specops replay: {loaded.profile.method.replay} (vLLM {vllm_cpu.version()}) over the target's greedy "
              f"outputs, {len(p.prompt_tokens_per_step)} prompts x {b.output_tokens} tokens, each request alone{warm}")
    return Predicted(setting=p.label, accepted_per_step=p.per_drafted_step, tokens_per_step=p.tokens_per_step,
                     source=source, by_category={c: v for c, v in p.by_category.items() if v is not None},
                     speedup=p.speedup, category_speedups=p.category_speedups,
                     cost=step_cost_text(loaded), prompt_counts=p.prompt_counts)


def priced_at(predicted: Predicted | None, loaded: LoadedProfile) -> Predicted | None:
    """The prediction at the load `loaded` runs at: the same replay weighed by that concurrency's step cost (a
    sweep's cells: one replay per setting, a price per concurrency measured on this host)."""
    if predicted is None or not predicted.prompt_counts:
        return predicted
    cost = step_cost(loaded)
    return predicted.model_copy(update={"speedup": predicted_speedup(cost, predicted.prompt_counts) if cost else None,
                                        "category_speedups": {}, "cost": cost.describe() if cost else NO_COST})


def step_cost_text(loaded: LoadedProfile) -> str:
    cost = step_cost(loaded)
    return cost.describe() if cost else NO_COST
