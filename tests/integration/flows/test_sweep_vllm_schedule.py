"""A sweep on real vLLM (ngram-vllm-serve-cpu, vLLM's OpenAI server on this CPU) over the n-gram settings K {1, 2}
with prompt_lookup_min 1 and max 3 (series k1-min1-max3, k2-min1-max3; the profile's own min is 2) x concurrency
{1, 2}: the knobs reach each engine, and the recommended per-load schedule is rendered in vLLM's own key
(speculative_config.num_speculative_tokens_per_batch_size) and then served and measured at every concurrency:
a tested schedule, not only a rendered one. The engine's own config shows the schedule it runs. Each draft
length's cells carry the replay's prediction of vLLM's accepted tokens per step: at concurrency 1 (one request at a
time) it agrees with vLLM's counters within 0.1 (issue 38).

The prompts are ones n-gram lookup pays on by construction (each a sentence said six times, which the model goes on
repeating), so that some K beats the base on any host: what is tested is the schedule's rendering and serving, not
whether speculation pays on HumanEval (bench-pays and the workloads tests measure that). On HumanEval's prompts at
24 tokens, a host without AMX (avx512_vnni only; CI 2026-12-07) measured K=1 1.18x (0.90-1.56) and K=2 0.98x
(0.77-1.25) at concurrency 1: no K named, no schedule to serve. These prompts at 48 tokens, alone on that host:
K=1 1.35x (1.18-1.55), K=2 1.59x (1.21-2.07)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from specops.backends.vllm import cpu as vllm_cpu
from specops.bench.prompts import write_prompts_jsonl
from specops.results.model import RunResult
from specops.sweep.outcome import SweepOutcome
from tests.integration.support import REPO_ROOT, SHARED_CACHE, service_env

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(2400)]

KS, CS = [1, 2], [1, 2]
KNOBS = ["--ngram-min", "1", "--ngram-max", "3"]  # each series' directory: k<K>-min1-max3
# 12 prompts: a K is named only where its 95% interval clears the base's (issue 39), and with 4 the interval at
# concurrency 1 (over the prompts) was 0.94-3.03 for a 1.69x K=3; with 8 a loaded CI host once named none, so no
# schedule was rendered (2026-12-06); the schedule served needs some K named. 48 tokens: on the prompts below, alone
# on the host without AMX, K=1 at concurrency 1 measured 1.30x (1.08-1.56) at 24 tokens, 1.35x (1.18-1.55) at 48.
AGREEMENT = 0.1  # accepted tokens per step, replay vs vLLM's counters (issue 38)
SHRINK = ["benchmark.num_requests=12", "benchmark.output_tokens=48", "comparison.lossless_prompts=1",
          "comparison.lossless_max_tokens=16"]
SENTENCES = ["The quick brown fox jumps over the lazy dog.", "A stitch in time saves nine, said the old tailor.",
             "Red sky at night, sailor's delight; red sky at morning, sailors take warning.",
             "All work and no play makes Jack a dull boy.", "She sells sea shells by the sea shore.",
             "The rain in Spain stays mainly in the plain.",
             "Early to bed and early to rise makes a man healthy, wealthy and wise.",
             "An apple a day keeps the doctor away.", "Every good boy deserves fudge, and every cow eats grass.",
             "Peter Piper picked a peck of pickled peppers.",
             "How much wood would a woodchuck chuck if a woodchuck could chuck wood?",
             "Twinkle, twinkle, little star, how I wonder what you are."]


def repeating_prompts(path):
    """Plain-text prompts (raw completions) the n-gram matcher finds its drafts in: each sentence six times."""
    return write_prompts_jsonl((" ".join([s] * 6) for s in SENTENCES), path)


def test_the_recommended_schedule_is_served_and_measured(embedded_model, tmp_path):
    problems = vllm_cpu.preflight()
    assert not problems, problems
    cache = tmp_path / "cache"  # no cells of an earlier session: everything is measured here
    cache.mkdir()
    (cache / "embedded").symlink_to(SHARED_CACHE / "embedded", target_is_directory=True)
    env = service_env(tmp_path, SPECOPS_CACHE=str(cache))
    args = [sys.executable, "-m", "cli", "sweep", "ngram-vllm-serve-cpu", "--k", ",".join(map(str, KS)),
            *KNOBS, "--concurrency", ",".join(map(str, CS)), "--run-id", "sweep"]
    for item in [*SHRINK, f"benchmark.prompts={repeating_prompts(tmp_path / 'repeating.jsonl')}"]:
        args += ["--set", item]
    proc = subprocess.run(args, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=2300)
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-3000:]
    run = tmp_path / "artifacts" / "ngram-vllm-serve-cpu" / "sweep"
    outcome = SweepOutcome.model_validate_json((run / "sweep.json").read_text())
    r = outcome.recommendation
    assert r.backend_keys is not None, outcome.table  # some K named: its cells' intervals say why not
    keys = r.backend_keys["speculative_config"]
    schedule = keys["num_speculative_tokens_per_batch_size"]
    # The best K per concurrency, as vLLM's inclusive batch-size ranges from batch size 1.
    assert schedule[0][0] == 1 and keys["num_speculative_tokens"] == max(k for *_, k in schedule)
    for c, k in outcome.best.items():
        assert next(rk for start, end, rk in schedule if start <= c <= end) == (k or 0)
    # Served once, after the grid (one server per K, one for the schedule; the base once), measured at each load.
    assert outcome.server_starts == {"base": 1, "speculative": len(KS) + 1}
    assert [c.concurrency for c in outcome.schedule_cells] == CS
    assert all(c.status == "ok" and c.speedup is not None and c.spec_tok_s for c in outcome.schedule_cells)
    assert [m for m in outcome.measured if m.startswith("schedule-")] == [f"schedule-c{c}" for c in CS]
    assert "schedule" in outcome.table.splitlines()[3 + len(KS)]
    # The engine runs the schedule it was given (read back from the served config).
    served = json.loads((run / "schedule" / "logs" / "server-speculative-engine-config.json").read_text())
    assert served["speculative_config"]["num_speculative_tokens_per_batch_size"] == schedule
    assert served["speculative_config"]["prompt_lookup_min"] == 1  # with the settings' knobs
    for k in KS:  # vLLM's n-gram matcher replayed over the target's greedy outputs, beside what vLLM counted
        engine = json.loads((run / f"k{k}-min1-max3" / "logs" / "server-speculative-engine-config.json").read_text())
        spec = engine["speculative_config"]
        assert (spec["num_speculative_tokens"], spec["prompt_lookup_min"], spec["prompt_lookup_max"]) == (k, 1, 3)
        cell = RunResult.model_validate_json((run / f"k{k}-min1-max3" / "c1" / "manifest.json").read_text())
        measured = cell.variant("speculative").acceptance.mean_accepted_per_step
        print(f"K={k}: accepted/step predicted {cell.predicted.accepted_per_step:.3f}, measured {measured:.3f}")
        assert cell.predicted.setting == f"ngram min 1 max 3 K {k}"
        assert abs(measured - cell.predicted.accepted_per_step) <= AGREEMENT, (k, cell.predicted, measured)
