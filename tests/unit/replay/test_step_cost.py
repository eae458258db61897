"""The step cost (specops/replay/step_cost.py) and the speedup a replay predicts with it: the four costs recovered
from requests a known cost produced (alone and batched, with the replay's steps where the engine's count overshoots), a setting that keeps more of what it verifies ranked above one that accepts
more per step but verifies far more, an interval that widens with the prompts' spread, and a host with no measured
cost saying so in one line while tokens per step still print."""
from __future__ import annotations

import random
import re

import pytest

from specops.replay.grid import NgramSetting, Prediction, pruned, ranked, ranking_table
from specops.replay.step_cost import CostStore, StepCost, cost_key, fit, observations, predicted_speedup
from specops.results.metrics import RequestSample

KEY = cost_key("vLLM 0.32.0", "ngram", "f" * 64, "float32", "Intel Xeon", 1)
# a step: 50 ms, +10 ms where the engine proposes, +30 ms with a draft, +4 ms a token
TRUE = {"fixed": 0.050, "proposer": 0.010, "draft": 0.030, "token": 0.004}
UNIT = TRUE["fixed"] + TRUE["token"]  # a base step: what the fitted costs are in units of


def cost(**update) -> StepCost:
    return StepCost(key=KEY, fixed_s=TRUE["fixed"] / UNIT, proposer_s=TRUE["proposer"] / UNIT, draft_s=TRUE["draft"] / UNIT,
                    per_token_s=TRUE["token"] / UNIT, prefill_s=2.0, requests=32, runs=2, measured_at=0.0,
                    residual=0.0).model_copy(update=update)


def served(rng: random.Random, k: int, accept: float, tokens: int = 64, found: float = 1.0,
           prompt: int = 0) -> tuple[RequestSample, RequestSample]:
    """A speculative request (drafts of k on a share `found` of its steps, a share `accept` of them kept) and its
    base twin, timed by TRUE."""
    done = steps = drafted_steps = drafted = accepted = 0
    while done < tokens - 1:
        has = rng.random() < found
        kept = sum(rng.random() < accept for _ in range(k)) if has else 0
        steps, drafted_steps, drafted, accepted = steps + 1, drafted_steps + has, drafted + k * has, accepted + kept
        done += kept + 1
    spec_s = (steps * (TRUE["fixed"] + TRUE["token"] + TRUE["proposer"]) + drafted_steps * TRUE["draft"]
              + drafted * TRUE["token"])
    spec = RequestSample(prompt=prompt, round=0, latency_s=0.1 + spec_s, ttft_s=0.1, output_tokens=done + 1,
                         spec_steps=drafted_steps, accepted_tokens=accepted, draft_tokens=drafted)
    base_s = (tokens - 1) * (TRUE["fixed"] + TRUE["token"])
    return spec, RequestSample(prompt=prompt, round=0, latency_s=0.1 + base_s, ttft_s=0.1, output_tokens=tokens)


def test_the_four_costs_are_recovered_from_served_requests_of_two_draft_lengths():
    rng = random.Random(1)
    found, slow = [], []
    for k, accept in ((2, 0.6), (8, 0.4)):
        pairs = [served(rng, k, accept, found=rng.uniform(0.3, 1.0)) for _ in range(12)]
        found += observations([s for s, _ in pairs], [b for _, b in pairs], f"run-k{k}")
        # the same requests on a host twice as slow: the same costs in its own base steps
        twice = [[r.model_copy(update={"latency_s": 2 * r.latency_s, "ttft_s": 2 * r.ttft_s}) for r in pair]
                 for pair in pairs]
        slow += observations([s for s, _ in twice], [b for _, b in twice], f"slow-k{k}")
    got = fit(found, KEY, 0.0)
    assert got.fixed_s == pytest.approx(TRUE["fixed"] / UNIT, abs=0.03)
    assert got.proposer_s == pytest.approx(TRUE["proposer"] / UNIT, abs=0.03)
    assert got.draft_s == pytest.approx(TRUE["draft"] / UNIT, abs=0.03)
    assert got.per_token_s == pytest.approx(TRUE["token"] / UNIT, abs=0.01) and got.residual < 0.01 and got.runs == 2
    assert "a step with a draft = 1.74 base steps + 0.074 per drafted token verified, 1.19 without" in got.describe()
    assert fit(found[:24] + slow[24:], KEY, 0.0).draft_s == pytest.approx(got.draft_s, abs=0.01)
    assert fit(found[:3], KEY, 0.0) is None  # too few speculative requests to tell a draft's cost


def counts(steps: int, drafted_steps: int, drafted: int, accepted: int, emitted: int = 63) -> dict:
    return {"steps": steps, "emitted": emitted, "drafted_steps": drafted_steps, "drafted": drafted, "accepted": accepted}


def test_a_setting_that_verifies_far_more_than_it_keeps_ranks_below_one_that_keeps_what_it_verifies():
    thrifty = Prediction.of(NgramSetting(min=1, max=3, k=2), [counts(30, 30, 60, 33)] * 4)  # 2.1 tokens a step
    greedy = Prediction.of(NgramSetting(min=1, max=3, k=64), [counts(25, 25, 1600, 38)] * 4)  # 2.5, 64 verified
    assert greedy.tokens_per_step > thrifty.tokens_per_step and ranked([thrifty, greedy])[0] is greedy  # no cost
    c = cost()
    priced = [p.model_copy(update={"speedup": predicted_speedup(c, p.prompt_counts)}) for p in (thrifty, greedy)]
    assert ranked(priced)[0].setting.k == 2
    assert priced[0].speedup.point > 1.0 > priced[1].speedup.point
    kept, why = pruned(priced)
    assert [p.setting.k for p in kept] == [2] and "below the best's lower end" in why[0]


def test_the_interval_widens_with_the_prompts_spread():
    c = cost()
    steady = predicted_speedup(c, [counts(30, 30, 60, 33)] * 6)
    spread = predicted_speedup(c, [counts(s, s, 2 * s, 63 - s) for s in (20, 45, 25, 50, 22, 40)])
    assert steady.low == pytest.approx(steady.high)  # identical prompts: no spread to weigh
    assert spread.high / spread.low > 1.2 and spread.low < spread.point < spread.high


def test_with_no_measured_cost_the_replay_says_so_in_one_line_and_still_ranks_by_tokens_per_step(tmp_path,
                                                                                                 monkeypatch):
    from specops.profile.loader import load_profile
    from specops.replay import run

    monkeypatch.setattr(run, "cache_root", lambda: tmp_path)
    monkeypatch.setattr(run, "cost_key_of", lambda loaded: KEY)
    monkeypatch.setattr(run, "run_worker", lambda request, say: {"results": [[counts(30, 30, 120, 33)]]})
    said: list[str] = []
    (p,) = run.simulate(load_profile("ngram-vllm-serve-cpu"), [{}], [NgramSetting(min=1, max=3, k=4)], 64, [None],
                        said.append)
    assert said[-1] == f"replay: {run.NO_COST}" and p.speedup is None
    table = ranking_table([p], None)
    assert re.search(r"K 4 +- +2\.10 ", table)  # no predicted speedup; tokens per step all the same
    store = CostStore(tmp_path)
    rng = random.Random(2)
    pairs = [served(rng, 4, 0.5) for _ in range(8)]
    store.add(KEY, observations([s for s, _ in pairs], [b for _, b in pairs], "run"), 10.0)
    assert store.cost(KEY).requests == 16 and store.cost(cost_key("vLLM 0.32.0", "ngram", "f" * 64, "float32", "AMD", 1)) \
        is None  # another CPU's cost is not this host's
    (priced,) = run.simulate(load_profile("ngram-vllm-serve-cpu"), [{}], [NgramSetting(min=1, max=3, k=4)], 64,
                             [None], said.append)
    assert said[-1].startswith("replay: a step with a draft = ") and priced.speedup is not None


def test_a_sweep_cell_is_priced_at_its_own_loads_step_cost(tmp_path, monkeypatch):
    from specops.profile.loader import load_profile
    from specops.replay import run
    from specops.results.predicted import Predicted

    monkeypatch.setattr(run, "cache_root", lambda: tmp_path)
    key_at = {c: cost_key("vLLM 0.32.0", "ngram", "f" * 64, "float32", "Intel Xeon", c) for c in (1, 2)}
    monkeypatch.setattr(run, "cost_key_of", lambda loaded: key_at[loaded.profile.benchmark.concurrency])
    rng = random.Random(3)
    for c, k in ((1, 2), (1, 8), (2, 2), (2, 8)):
        pairs = [served(rng, k, 0.5) for _ in range(8)]
        spec = [s.model_copy(update={"latency_s": s.latency_s * (1.5 if c == 2 else 1.0)}) for s, _ in pairs]
        CostStore(tmp_path).add(key_at[c], observations(spec, [b for _, b in pairs], f"c{c}-k{k}"), 1.0)
    one = Predicted(setting="s", accepted_per_step=2.0, tokens_per_step=1.9, source="t",
                    prompt_counts=[counts(30, 30, 120, 33)] * 4)
    at = {c: run.priced_at(one, load_profile("ngram-vllm-serve-cpu", [f"benchmark.concurrency={c}"])) for c in (1, 2)}
    assert at[1].speedup.point > at[2].speedup.point  # drafting costs more where the step costs more
    assert "concurrency 2" in at[2].cost
    monkeypatch.setattr(run, "cost_key_of", lambda loaded: cost_key("other", "ngram", "0" * 64, "bf16", "none", 4))
    bare = run.priced_at(one, load_profile("ngram-vllm-serve-cpu"))
    assert bare.speedup is None and bare.cost == run.NO_COST


def test_the_replays_steps_stand_for_the_engines_where_its_accepted_count_runs_past_the_end():
    rng = random.Random(4)
    pairs = [served(rng, k, 0.5, found=rng.uniform(0.3, 1.0), prompt=i) for i, k in enumerate([2, 8] * 8)]
    truth = [{"steps": s.output_tokens - 1 - s.accepted_tokens, "drafted_steps": s.spec_steps,
              "drafted": s.draft_tokens} for s, _ in pairs]
    # the engine also counts the drafts it accepted past each request's last token: its steps look fewer
    over = [s.model_copy(update={"accepted_tokens": s.accepted_tokens + 5}) for s, _ in pairs]
    base = [b for _, b in pairs]
    engine = observations(over, base, "run")
    replayed = observations(over, base, "run", replayed=truth)
    assert [o.steps for o in replayed[:16]] == [t["steps"] for t in truth]
    assert [o.steps for o in engine[:16]] == [t["steps"] - 5 for t in truth]
    right, wrong = fit(replayed, KEY, 0.0), fit(engine, KEY, 0.0)
    assert right.draft_s == pytest.approx(TRUE["draft"] / UNIT, abs=0.01) and right.residual < 0.001
    # the engine's counts: fewer steps for the same time, read as a dearer proposer and a worse fit
    assert wrong.proposer_s > 1.5 * TRUE["proposer"] / UNIT and wrong.residual > 0.004


def test_a_batched_step_carries_its_partners_drafts():
    """At concurrency 2 each step of a request also verifies its partner's drafts: the same costs price a setting
    that drafts long below where it stands alone, and a setting that drafts nothing is not touched by it."""
    c = cost(per_token_s=0.05, proposer_s=0.0)
    at = {n: c.model_copy(update={"key": {**KEY, "concurrency": str(n)}}) for n in (1, 2)}
    long = [counts(20, 20, 160, 43)] * 4
    alone, batched = (predicted_speedup(at[n], long) for n in (1, 2))
    assert batched.point < alone.point
    none = [counts(63, 0, 0, 0)] * 4
    assert predicted_speedup(at[2], none).point == pytest.approx(predicted_speedup(at[1], none).point)


def test_a_replay_of_other_prompts_is_not_read_as_the_requests_steps():
    rng = random.Random(5)
    pairs = [served(rng, 4, 0.5, prompt=i) for i in range(6)]
    spec, base = [s for s, _ in pairs], [b for _, b in pairs]
    short = [{"steps": 1, "drafted_steps": 1, "drafted": 4}] * 3  # fewer prompts than the run measured
    assert observations(spec, base, "run", replayed=short) == observations(spec, base, "run")
