"""What a decode step costs on a served engine, measured from its own served runs; and the speedup a setting's replay
predicts with it.

A step's time is modelled as fixed + draft_s x [the step verifies a draft] + per_token_s x (tokens it verifies): on a
CPU a forward over several tokens is a matrix product where one token is a vector product (the jump), then grows
with the tokens. A served request's decode time (its latency less its time to first token) is the sum of its steps,
so each request of a run at concurrency 1 is one equation in the three unknowns: its steps S (output tokens - 1 -
accepted drafts), its drafted steps D (vLLM's per-request num_spec_steps; 0 for the base) and the tokens it verified
N (S + the drafts it was given). Times are kept in units of the same run's base step (its base requests' decode
time per step): a host's speed moves from run to run (2x between days here), and a speedup needs only what a step
costs relative to the base's, which a run measures on both arms in the same minutes. The store keeps each request's
(S, D, N, decode time, prefill time) per engine, target, dtype, CPU model and concurrency, from every served run on
the host, and fits the three by non-negative least squares; a run's own prediction uses what was measured before
it. The replay gives a setting's S, D and N per prompt (its greedy steps), so each prompt's time on both arms
follows, and their ratio with its interval over the prompts (results.speedup) is the predicted speedup.
"""
from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import numpy as np

from specops.atomic_file import write_text
from specops.results.metrics import Record, RequestSample
from specops.results.paired import Design, Speedup
from specops.results.speedup import paired_speedup

KEEP = 400  # requests kept per key: about 25 runs of 16 prompts, the newest
MIN_DRAFTED = 4  # speculative requests a fit needs (base requests alone cannot tell a draft's cost)


class Observation(Record):
    steps: int
    drafted_steps: int
    verified: int
    decode: float  # decode time, in base steps of its run
    prefill: float  # time to first token, in base steps of its run
    run: str  # the run directory it came from


class StepCost(Record):
    """In base steps: a base step (fixed + one verified token) is 1 by construction of the units."""

    key: dict[str, str]
    fixed_s: float
    draft_s: float
    per_token_s: float
    prefill_s: float  # mean time to first token
    requests: int
    runs: int
    measured_at: float  # Unix time of the newest observation's run
    residual: float  # relative RMS error of the fit over its requests

    def describe(self) -> str:
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(self.measured_at))
        return (f"a step with a draft = {1 + self.draft_s:.2f} base steps + {self.per_token_s:.3f} per drafted token "
                f"verified ({self.key['engine']}, {self.key['cpu']}, "
                f"concurrency {self.key['concurrency']}; {self.requests} requests of {self.runs} runs, last {when}, "
                f"fit within {self.residual:.0%})")


def cost_key(engine: str, target_sha256: str, dtype: str, cpu: str, concurrency: int) -> dict[str, str]:
    return {"engine": engine, "target": target_sha256[:16], "dtype": dtype, "cpu": cpu, "concurrency": str(concurrency)}


def observations(spec: list[RequestSample], base: list[RequestSample], run: str) -> list[Observation]:
    """Each request's equation in units of the run's base step, where it carries what the fit needs (its time to
    first token, and for the speculative arm the engine's per-request counts); none without a base to measure the
    unit by."""
    timed = [s for s in base if s.ttft_s is not None and s.output_tokens > 1]
    if not timed:
        return []
    unit = sum(s.latency_s - s.ttft_s for s in timed) / sum(s.output_tokens - 1 for s in timed)
    out = []
    for s in [*(s for s in spec if s.spec_steps is not None), *timed]:
        if s.ttft_s is None or s.output_tokens < 2:
            continue
        steps = s.output_tokens - 1 - (s.accepted_tokens or 0)
        out.append(Observation(steps=steps, drafted_steps=s.spec_steps or 0, verified=steps + (s.draft_tokens or 0),
                               decode=(s.latency_s - s.ttft_s) / unit, prefill=s.ttft_s / unit, run=run))
    return out


def fit(found: list[Observation], key: dict[str, str], measured_at: float) -> StepCost | None:
    """The three costs by non-negative least squares; None with too few speculative requests to tell them."""
    from scipy.optimize import nnls  # noqa: PLC0415 - only a prediction needs it

    if sum(o.drafted_steps > 0 for o in found) < MIN_DRAFTED or len(found) < 2 * MIN_DRAFTED:
        return None
    a = np.array([[o.steps, o.drafted_steps, o.verified - o.steps] for o in found], dtype=float)
    # columns: every step (fixed + its own token), steps with a draft, drafted tokens verified
    y = np.array([o.decode for o in found])
    (per_step, draft, per_token), _ = nnls(a, y)
    rms = float(np.sqrt(np.mean(((a @ [per_step, draft, per_token]) - y) ** 2)) / np.mean(y))
    # per_step holds fixed + one verified token; split it by the drafted tokens' rate
    return StepCost(key=key, fixed_s=float(per_step - per_token), draft_s=float(draft), per_token_s=float(per_token),
                    prefill_s=float(np.mean([o.prefill for o in found])), requests=len(found),
                    runs=len({o.run for o in found}), measured_at=measured_at, residual=rms)


def predicted_speedup(cost: StepCost, counts: list[dict], prompts: list[int] | None = None) -> Speedup | None:
    """A setting's speedup from its replay (`counts`: per prompt, its steps / drafted_steps / drafted, and `emitted`,
    the tokens after the prefill's) and the step cost: each prompt's time on the base (`emitted` steps of one
    token) and on the setting, paired prompt by prompt (results.speedup: its interval over the prompts)."""
    chosen = range(len(counts)) if prompts is None else prompts
    one = cost.fixed_s + cost.per_token_s
    spec, base = [], []
    for i in chosen:
        c, tokens = counts[i], counts[i]["emitted"] + 1
        spec_s = cost.prefill_s + one * c["steps"] + cost.draft_s * c["drafted_steps"] + cost.per_token_s * c["drafted"]
        spec.append(RequestSample(prompt=i, round=0, latency_s=spec_s, output_tokens=tokens))
        base.append(RequestSample(prompt=i, round=0, latency_s=cost.prefill_s + one * c["emitted"],
                                  output_tokens=tokens))
    return paired_speedup(spec, base, design=Design.REQUESTS) if spec else None


class CostStore:
    """Per key, the newest KEEP requests measured on this host (the cache is the host's own)."""

    def __init__(self, cache_dir: Path):
        self.root = Path(cache_dir) / "step-costs"

    def _path(self, key: dict[str, str]) -> Path:
        return self.root / (hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:20] + ".json")

    def _read(self, key: dict[str, str]) -> dict:
        try:
            return json.loads(self._path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):  # none yet, or damaged: measured again by the next run
            return {"key": key, "observations": [], "measured_at": 0.0}

    def cost(self, key: dict[str, str]) -> StepCost | None:
        kept = self._read(key)
        return fit([Observation.model_validate(o) for o in kept["observations"]], key, kept["measured_at"])

    def add(self, key: dict[str, str], found: list[Observation], when: float) -> None:
        if not found:
            return
        kept = self._read(key)
        rows = [*kept["observations"], *(o.model_dump() for o in found)][-KEEP:]
        write_text(self._path(key), json.dumps({"key": key, "observations": rows, "measured_at": when}) + "\n")
