"""What a decode step costs on a served engine, measured from its own served runs, and the speedup a setting's replay
predicts with it (the model, and why each term: docs/concepts/replay.md, "The predicted speedup").

A step costs fixed + proposer_s (the proposer runs on every step of a speculative engine) + draft_s (the step verifies
a draft) + per_token_s x drafted tokens verified; above concurrency 1 each step also carries its partners' proposals
and drafts at the setting's mean rate. A served request's decode time is the sum of its steps: one equation per
request, in units of its run's base step (a host's speed moves 2x between days here; a speedup needs only the ratio),
its steps the run's replay's where it has one. The store keeps the equations per engine, method, target, dtype, CPU
model and concurrency (one fit over n-gram and suffix missed each by 2-3%, 2026-12-06) and fits the four costs by
non-negative least squares; a run's own prediction uses what was measured before it.
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
    """One request's equation: its terms as the fit weighs them (partners' shares included at concurrency > 1)."""

    steps: int
    proposed: float  # steps the proposer ran in: the request's and its partners' (0 on the base)
    drafted_steps: float
    drafted: float  # drafted tokens verified
    decode: float  # decode time, in base steps of its run
    prefill: float  # time to first token, in base steps of its run
    run: str  # the run directory it came from


class StepCost(Record):
    """In base steps: a base step (fixed + one verified token) is 1 by construction of the units."""

    key: dict[str, str]
    fixed_s: float
    proposer_s: float
    draft_s: float
    per_token_s: float
    prefill_s: float  # mean time to first token
    requests: int
    runs: int
    measured_at: float  # Unix time of the newest observation's run
    residual: float  # relative RMS error of the fit over its requests

    def describe(self) -> str:
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(self.measured_at))
        return (f"a step with a draft = {1 + self.proposer_s + self.draft_s:.2f} base steps + "
                f"{self.per_token_s:.3f} per drafted token verified, {1 + self.proposer_s:.2f} without "
                f"({self.key['engine']}, {self.key['method']}, {self.key['cpu']}, "
                f"concurrency {self.key['concurrency']}; {self.requests} requests of {self.runs} runs, last {when}, "
                f"fit within {self.residual:.0%})")


def cost_key(engine: str, method: str, target_sha256: str, dtype: str, cpu: str, concurrency: int) -> dict[str, str]:
    return {"engine": engine, "method": method, "target": target_sha256[:16], "dtype": dtype, "cpu": cpu,
            "concurrency": str(concurrency)}


def _rates(counts: list[dict]) -> tuple[float, float]:
    """Drafted steps and drafted tokens per step over a setting's requests: what a partner adds to a batched step."""
    steps = sum(c["steps"] for c in counts) or 1
    return sum(c["drafted_steps"] for c in counts) / steps, sum(c["drafted"] for c in counts) / steps


def _terms(c: dict, partners: int, rates: tuple[float, float]) -> dict[str, float]:
    """A speculative request's terms: its own counts and, per step, its partners' proposals and drafts."""
    s = c["steps"]
    return {"steps": s, "proposed": s * (1 + partners), "drafted_steps": c["drafted_steps"] + partners * rates[0] * s,
            "drafted": c["drafted"] + partners * rates[1] * s}


def observations(spec: list[RequestSample], base: list[RequestSample], run: str, concurrency: int = 1,
                 replayed: list[dict] | None = None) -> list[Observation]:
    """Each request's equation in units of the run's base step, where it carries what the fit needs (its time to
    first token, and for the speculative arm its counts: the run's replay per prompt, `replayed`, else the engine's
    per-request counts); none without a base to measure the unit by."""
    timed = [s for s in base if s.ttft_s is not None and s.output_tokens > 1]
    if not timed:
        return []
    unit = sum(s.latency_s - s.ttft_s for s in timed) / sum(s.output_tokens - 1 for s in timed)
    drafted = [s for s in spec if s.spec_steps is not None and s.ttft_s is not None and s.output_tokens > 1]
    replayed = replayed if replayed and all(s.prompt < len(replayed) for s in drafted) else None  # not these prompts'
    counts = [replayed[s.prompt] if replayed else
              {"steps": s.output_tokens - 1 - (s.accepted_tokens or 0), "drafted_steps": s.spec_steps,
               "drafted": s.draft_tokens or 0} for s in drafted]
    rates = _rates(counts)
    terms = [_terms(c, concurrency - 1, rates) for c in counts]
    terms += [{"steps": s.output_tokens - 1, "proposed": 0, "drafted_steps": 0, "drafted": 0} for s in timed]
    return [Observation(**t, decode=(s.latency_s - s.ttft_s) / unit, prefill=s.ttft_s / unit, run=run)
            for s, t in zip([*drafted, *timed], terms)]


def fit(found: list[Observation], key: dict[str, str], measured_at: float) -> StepCost | None:
    """The four costs by non-negative least squares; None with too few speculative requests to tell them."""
    from scipy.optimize import nnls  # noqa: PLC0415 - only a prediction needs it

    if sum(o.drafted_steps > 0 for o in found) < MIN_DRAFTED or len(found) < 2 * MIN_DRAFTED:
        return None
    a = np.array([[o.steps, o.proposed, o.drafted_steps, o.drafted] for o in found], dtype=float)
    # columns: every step (fixed + its batch's own tokens), proposals, steps with a draft, drafted tokens verified
    y = np.array([o.decode for o in found])
    coef, _ = nnls(a, y)
    rms = float(np.sqrt(np.mean(((a @ coef) - y) ** 2)) / np.mean(y))
    per_step, proposer, draft, per_token = (float(x) for x in coef)
    # per_step holds fixed + one verified token; split it by the drafted tokens' rate
    return StepCost(key=key, fixed_s=per_step - per_token, proposer_s=proposer, draft_s=draft, per_token_s=per_token,
                    prefill_s=float(np.mean([o.prefill for o in found])), requests=len(found),
                    runs=len({o.run for o in found}), measured_at=measured_at, residual=rms)


def predicted_speedup(cost: StepCost, counts: list[dict], prompts: list[int] | None = None) -> Speedup | None:
    """A setting's speedup from its replay (`counts`: per prompt, its steps / drafted_steps / drafted, and `emitted`,
    the tokens after the prefill's) and the step cost: each prompt's time on the base (`emitted` steps of one
    token) and on the setting, paired prompt by prompt (results.speedup: its interval over the prompts)."""
    chosen = range(len(counts)) if prompts is None else prompts
    one, partners, rates = cost.fixed_s + cost.per_token_s, int(cost.key["concurrency"]) - 1, _rates(counts)
    spec, base = [], []
    for i in chosen:
        c, tokens = counts[i], counts[i]["emitted"] + 1
        t = _terms(c, partners, rates)  # partners: any of the setting's requests, whatever the category asked
        spec_s = (cost.prefill_s + one * t["steps"] + cost.proposer_s * t["proposed"]
                  + cost.draft_s * t["drafted_steps"] + cost.per_token_s * t["drafted"])
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
