"""Every method on the embedded target, measured by genai-perf against the base, with its bound;
and the embedded runtime against HF transformers' own speculative `generate`.

    .venv/bin/python benchmarks/draft_bench.py [--profiles eagle3-local ...] [--set key=value ...]

For each profile, runs the real `specdec` flow (training the draft first when the profile's
draft is `train:`, cached afterwards) on HumanEval at concurrency 1 and prints tokens/s vs
base, tokens per step, the analytical bound from the measured acceptance and the measured
draft and verification costs, and the share of it genai-perf measured. Then, for methods
HF `generate` can speculate with (n-gram, draft model), tokens/s of both implementations on
the same prompts in one process. Figures are ratios from one run; nothing here asserts.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import provenance

PROFILES = ["ngram-local", "eagle3-local", "eagle-local", "medusa-local", "draft-target-local"]
DEFAULTS = ["benchmark.num_requests=8", "benchmark.output_tokens=96"]


def measure_profile(profile: str, overrides: list[str]) -> dict:
    from flows.specdec import run_specdec
    from specops.draft.spec import RESULT_FILE

    start = time.monotonic()
    result = run_specdec(profile, overrides)
    spec, base = result.variant("speculative"), result.variant("base")
    acc, base_acc = spec.acceptance, base.acceptance
    row = {
        "profile": profile, "method": spec.method, "status": result.verdict.value, "run_dir": result.run_dir,
        "base_tok_s": base.metrics.output_token_throughput_tok_s,
        "spec_tok_s": spec.metrics.output_token_throughput_tok_s,
        "speedup": result.speedup.point, "speedup_text": result.speedup.text(),
        "acceptance_rate": _num(acc.acceptance_rate), "accepted_per_drafted_step": _num(acc.mean_accepted_per_step),
        "tokens_per_step": _num(acc.tokens_per_step), "bound": _num(result.bound),
        "base_step_ms": 1000 * _num(base_acc.step_seconds if base_acc else None),
        "spec_step_ms": 1000 * _num(acc.step_seconds), "draft_ms_per_step": 1000 * _num(acc.draft_seconds_per_step),
        "wall_s": time.monotonic() - start,
    }
    row["of_bound"] = row["speedup"] / row["bound"] if row["bound"] else float("nan")
    trained = Path(result.run_dir) / RESULT_FILE
    if trained.exists():
        record = json.loads(trained.read_text())
        row |= {"train_s": record["train_seconds"], "target_pass_s": record["prepare_seconds"],
                "draft_dir": record["export_dir"], "train_tokens": record["tokens"]}
    return row


def _num(value) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return float("nan")


def hf_rows(rows: list[dict], overrides: list[str]) -> list[dict]:
    from specops.bench.prompts import load_prompts
    from specops.profile.loader import load_profile
    from specops.runtime.hf_compare import HF_SPECULATION, compare
    from specops.settings import cache_root
    from specops.sources.fetch import fetch

    out = []
    for row in rows:
        if row["method"] not in HF_SPECULATION:
            continue
        profile = load_profile(row["profile"], overrides).profile
        options = profile.method.model_dump(exclude={"kind"}, exclude_none=True)
        if "draft_dir" in row:
            options["draft_dir"] = row["draft_dir"]
        bench = profile.benchmark
        prompts = load_prompts(bench.prompts, limit=bench.num_requests, offset=bench.prompt_offset)
        target = fetch(profile.target.source, cache_root(), log=lambda m: None)
        timing = compare(target.path, row["method"], options, prompts, bench.output_tokens)
        out.append({"profile": row["profile"], "method": row["method"], "runtime_tok_s": timing.runtime_tok_s,
                    "hf_tok_s": timing.hf_tok_s, "runtime_vs_hf": timing.runtime_vs_hf,
                    "runtime_greedy_tok_s": timing.runtime_greedy_tok_s, "hf_greedy_tok_s": timing.hf_greedy_tok_s})
    return out


def markdown(rows: list[dict], hf: list[dict]) -> str:
    lines = ["| profile | status | base tok/s | spec tok/s | speedup (95% interval) | tokens/step | "
             "accepted/drafted step | bound | of bound | draft ms/step | step ms spec/base | train s |",
             "|" + "---|" * 12]
    for r in rows:
        lines.append(
            f"| {r['profile']} | {r['status']} | {r['base_tok_s']:.2f} | {r['spec_tok_s']:.2f} | {r['speedup_text']} | "
            f"{r['tokens_per_step']:.2f} | {r['accepted_per_drafted_step']:.2f} | {r['bound']:.2f}x | "
            f"{r['of_bound']:.0%} | {r['draft_ms_per_step']:.1f} | {r['spec_step_ms']:.0f}/{r['base_step_ms']:.0f} | "
            f"{r.get('train_s', float('nan')):.0f} |")
    if hf:
        lines += ["", "| method | runtime tok/s | HF speculative tok/s | runtime/HF | runtime greedy | HF greedy |",
                  "|---|---|---|---|---|---|"]
        for h in hf:
            lines.append(f"| {h['method']} | {h['runtime_tok_s']:.2f} | {h['hf_tok_s']:.2f} | "
                         f"{h['runtime_vs_hf']:.2f}x | {h['runtime_greedy_tok_s']:.2f} | {h['hf_greedy_tok_s']:.2f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profiles", nargs="+", default=PROFILES)
    parser.add_argument("--set", dest="overrides", action="append", default=None)
    parser.add_argument("--no-hf", action="store_true", help="skip the HF transformers comparison")
    provenance.add_argument(parser)
    args = parser.parse_args()
    from prefect_adapters.ephemeral import prefect_defaults
    from specops.settings import artifacts_root

    prefect_defaults()
    overrides = args.overrides or DEFAULTS
    rows = [measure_profile(p, overrides) for p in args.profiles]
    hf = [] if args.no_hf else hf_rows(rows, overrides)
    table = markdown(rows, hf)
    out = artifacts_root() / "bench-drafts" / time.strftime("%Y%m%d-%H%M%S")
    out.mkdir(parents=True, exist_ok=True)
    (out / "table.md").write_text(table + "\n")
    (out / "results.json").write_text(json.dumps({"rows": rows, "hf": hf, "overrides": overrides}, indent=2))
    print("\n" + table + f"\n\n(written to {out})")
    provenance.record("draft_bench", "Every method on the embedded target vs base, its bound, and vs HF speculation",
                      table.splitlines(), args.figures)


if __name__ == "__main__":
    main()
