"""`specops replay`: rank speculation settings by the tokens per step a replay of the target's greedy outputs
predicts (the engines' own proposers, offline: no server is started), or of a recorded log's answers (--traffic)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from cli.common import _positive, profile_args
from specops.backends.base import PrerequisiteError
from specops.replay.grid import GRIDS


def add_parser(sub) -> None:
    replay = sub.add_parser("replay", help="predict tokens per step of n-gram and suffix settings on a profile's "
                            "prompts, from the target's greedy outputs (offline, in the vLLM venv), or on recorded "
                            "traffic (--traffic)")
    profile_args(replay)
    replay.add_argument("--grid", choices=(*GRIDS, "profile"), default="all",
                        help="which settings (profile: the profile's own only); the profile's own is always added")
    replay.add_argument("--top", type=_positive, help="print only the N best settings")
    replay.add_argument("--json", type=Path, metavar="FILE", help="also write every prediction to FILE as JSON")
    replay.add_argument("--traffic", type=Path, metavar="LOG", help="replay a recorded log's requests and the "
                        "answers the target gave (JSONL: OpenAI chat messages ending with the assistant's answer, "
                        "ShareGPT conversations, or prompt/response pairs; `category` optional) instead of "
                        "generating answers to the benchmark's prompts: tokenized with the target's tokenizer, nothing "
                        "generated")
    replay.set_defaults(handler=cmd_replay)


# What a replay of a log says of itself (specops.replay.traffic has the why and the sources)
TRAFFIC_NOTE = ("lengths are the log's, and drafts past a logged answer's end are not counted (the engine counts "
                "what it accepts there); an answer sampled at temperature > 0 is taken as the truth, where vLLM's "
                "rejection sampler accepts an n-gram or suffix draft with the target's probability of it: the "
                "served acceptance then runs lower; at temperature 0 they agree")


def cmd_replay(args) -> int:
    from specops.atomic_file import write_text
    from specops.backends.vllm import cpu as vllm_cpu
    from specops.profile.errors import ProfileError
    from specops.profile.loader import load_profile
    from specops.replay.grid import category_table, ranking_table, replayable
    from specops.replay.run import predict, predict_traffic, profile_setting, workload_of
    from specops.replay.traffic import read_traffic

    loaded = load_profile(args.profile, args.overrides)
    mine = profile_setting(loaded)
    if mine is None and args.grid == "profile":
        raise ProfileError(str(loaded.path), [("method.kind", f"{loaded.profile.method.kind!r} has no replay: "
                                                              f"{' and '.join(replayable())} do")])
    say = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731 - progress beside the table on stdout
    # What is replayed, read before any work: a bad log names its line, a bad prompt source its field
    records = read_traffic(args.traffic) if args.traffic is not None else None
    workload = workload_of(loaded, say) if records is None else None
    if args.json is not None and not args.json.parent.is_dir():
        raise PrerequisiteError(loaded.profile.name, [f"--json {args.json}: no directory {args.json.parent}"])
    if problems := vllm_cpu.preflight():
        raise PrerequisiteError(loaded.profile.name, problems)
    settings = [] if args.grid == "profile" else GRIDS[args.grid]()
    if mine is not None and args.grid in ("all", "profile", mine.method) and mine not in settings:
        settings.append(mine)
    if records is not None:
        predictions = predict_traffic(loaded, args.traffic, settings, say)
        categories = {r.category for r in records} - {None}
        print(f"{loaded.profile.name}: {len(records)} recorded requests of {args.traffic}, replayed on "
              f"{loaded.profile.target.source}'s tokenizer ({TRAFFIC_NOTE})\n")
    else:
        predictions = predict(loaded, settings, say, workload)
        categories = set(workload.named_categories())
        print(f"{loaded.profile.name}: {len(workload.measured)} prompts x {loaded.profile.benchmark.output_tokens} "
              f"tokens of {workload.label}, sent as {workload.request.name} ({workload.request.note})\n")
    print(ranking_table(predictions, args.top, mine))
    if categories:
        print("\n" + category_table(predictions, args.top, mine))
    if args.json is not None:
        # whole or not at all, as every file specops writes: a reader never sees half of it, nor a full disk 0 bytes
        write_text(args.json, json.dumps([p.model_dump() | {"profile": p.setting == mine} for p in predictions],
                                         indent=1) + "\n")
        print(f"\npredictions: {args.json}")
    return 0
