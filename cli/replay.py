"""`specops replay`: rank speculation settings by the tokens per step a replay of the target's greedy outputs
predicts (the engines' own proposers, offline: no server is started)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from cli.common import _positive, profile_args
from specops.backends.base import PrerequisiteError


def add_parser(sub) -> None:
    replay = sub.add_parser("replay", help="predict tokens per step of n-gram and suffix settings on a profile's "
                            "prompts, from the target's greedy outputs (offline, in the vLLM venv)")
    profile_args(replay)
    replay.add_argument("--grid", choices=("ngram", "suffix", "all", "profile"), default="all",
                        help="which settings (profile: the profile's own only); the profile's own is always added")
    replay.add_argument("--top", type=_positive, help="print only the N best settings")
    replay.add_argument("--json", type=Path, metavar="FILE", help="also write every prediction to FILE as JSON")
    replay.set_defaults(handler=cmd_replay)


def cmd_replay(args) -> int:
    from specops.atomic_file import write_text
    from specops.backends.vllm import cpu as vllm_cpu
    from specops.profile.errors import ProfileError
    from specops.profile.loader import load_profile
    from specops.replay.grid import GRIDS, ranking_table
    from specops.replay.run import predict, profile_setting, prompts_of

    loaded = load_profile(args.profile, args.overrides)
    mine = profile_setting(loaded)
    if mine is None and args.grid == "profile":
        raise ProfileError(str(loaded.path), [("method.kind", f"{loaded.profile.method.kind!r} has no replay: "
                                                              "ngram and suffix do")])
    prompts_of(loaded)  # the prompt source read before any work: a bad one is named as benchmark.prompts
    if args.json is not None and not args.json.parent.is_dir():
        raise PrerequisiteError(loaded.profile.name, [f"--json {args.json}: no directory {args.json.parent}"])
    if problems := vllm_cpu.preflight():
        raise PrerequisiteError(loaded.profile.name, problems)
    settings = [] if args.grid == "profile" else GRIDS[args.grid]()
    if mine is not None and args.grid in ("all", "profile", mine.method) and mine not in settings:
        settings.append(mine)
    say = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731 - progress beside the table on stdout
    predictions = predict(loaded, settings, say)
    b = loaded.profile.benchmark
    print(f"{loaded.profile.name}: {b.num_requests} prompts x {b.output_tokens} tokens ({b.prompts}, offset "
          f"{b.prompt_offset})\n")
    print(ranking_table(predictions, args.top, mine))
    if args.json is not None:
        # whole or not at all, as every file specops writes: a reader never sees half of it, nor a full disk 0 bytes
        write_text(args.json, json.dumps([p.model_dump() | {"profile": p.setting == mine} for p in predictions],
                                         indent=1) + "\n")
        print(f"\npredictions: {args.json}")
    return 0
