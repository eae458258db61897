"""What buys an EAGLE-3 head acceptance per CPU-second on SmolLM2-135M (issue 16's study).

Two steps, each printing what it measured; rows are appended to a JSONL so a curve builds up
over several invocations:

    # the target's own greedy continuations, batched in-process (ignore EOS, as the benchmark does)
    .venv/bin/python benchmarks/eagle3_study.py synthesize OUT.jsonl --prompts 480 --max-tokens 96
    # train on the first N records through specops' own trainer, measure held-out acceptance
    .venv/bin/python benchmarks/eagle3_study.py train OUT.jsonl --records 160 --epochs 3 --tag t160-e3

`train` uses `specops.draft.train.train_draft` (the path `eagle3-local` trains through) and
`specops.draft.train.measure_acceptance` (the embedded runtime) on HumanEval problems
0..N-1, which synthesis never uses (profiles hold out the first 64). Nothing here asserts.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

ROWS = Path("artifacts") / "eagle3-study" / "rows.jsonl"


def _target():
    """The target `eagle3-local` trains on, from its profile."""
    from specops.profile.loader import load_profile
    from specops.settings import cache_root
    from specops.sources.fetch import fetch

    source = load_profile("eagle3-local").profile.target.source
    return fetch(source, cache_root(), log=lambda m: None).path


def _key_json(pairs: list[str]) -> dict:
    return {key: json.loads(value) for key, value in (pair.split("=", 1) for pair in pairs)}


def prompt_items(count: int, first: Path | None) -> list[tuple[str, str]]:
    """(id, text): the prompts of `first` (a data file) in its order, then HumanEval 64.., then stdlib."""
    from specops.bench.conversations import read_conversations
    from specops.draft.prompt_sources import humaneval_prompts, stdlib_prompts

    items = []
    if first is not None:
        items = [(c.id, c.turns[0].content) for c in read_conversations(first)]
    seen = {i for i, _ in items}
    for item in humaneval_prompts(64) + stdlib_prompts(4 * count, seed=0):
        if item.id not in seen:
            items.append((item.id, item.text))
            seen.add(item.id)
    return items[:count]


def synthesize(args: argparse.Namespace) -> None:
    import torch

    from specops.bench.conversations import Conversation, Turn, write_record
    from specops.draft.prepare import load_target

    model, tok = load_target(_target(), args.threads)
    tok.padding_side = "left"  # generate appends on the right: every row's last token is real
    items = prompt_items(args.prompts, args.first)
    out = Path(args.out)
    done = {json.loads(line)["id"] for line in out.open()} if out.exists() else set()
    start, made = time.monotonic(), 0
    with out.open("a") as fh:
        # Chunks keep the file's order (a prefix is a smaller data set); inside one, batches of
        # similar prompt length waste little on padding.
        for c in range(0, len(items), args.chunk):
            todo = sorted((x for x in items[c:c + args.chunk] if x[0] not in done),
                          key=lambda x: len(tok(x[1])["input_ids"]))
            for b in range(0, len(todo), args.batch):
                part = todo[b:b + args.batch]
                enc = tok([text for _, text in part], return_tensors="pt", padding=True)
                with torch.inference_mode():
                    ids = model.generate(**enc, max_new_tokens=args.max_tokens, min_new_tokens=args.max_tokens,
                                         do_sample=False, pad_token_id=tok.pad_token_id)
                for (pid, text), row in zip(part, ids[:, enc["input_ids"].shape[1]:]):
                    turns = (Turn("user", text), Turn("assistant", tok.decode(row)))
                    write_record(fh, Conversation(pid, turns, "completion", pid.split("/")[0]))
                fh.flush()
                made += args.max_tokens * len(part)
                elapsed = time.monotonic() - start
                print(f"{c + b + len(part)}/{len(items)} prompts: {made} tokens in {elapsed:.0f}s "
                      f"({made / elapsed:.1f} tok/s)", flush=True)


def train(args: argparse.Namespace) -> None:
    from specops.bench.prompts import load_prompts
    from specops.draft.spec import TrainSpec
    from specops.draft.train import train_draft

    out = Path("artifacts") / "eagle3-study" / args.tag
    out.mkdir(parents=True, exist_ok=True)
    data = out / "data.jsonl"
    lines = [line for line in Path(args.data).read_text().splitlines() if line.strip()]
    lines = lines[:args.records or None]
    data.write_text("\n".join(lines) + "\n")
    spec = TrainSpec(mode="eagle3", draft_vocab_size=args.vocab, epochs=args.epochs, lr=args.lr,
                     batch_size=args.batch, seq_len=args.seq_len,
                     options=_key_json(args.opt), architecture=_key_json(args.arch))
    prompts = load_prompts("humaneval", limit=args.eval)
    start = time.monotonic()
    result = train_draft(spec, args.k, _target(), data, out / "train", log=print,
                         eval_prompts=prompts, eval_tokens=args.eval_tokens)
    row = {"tag": args.tag, "records": len(lines),
           "tokens": result.tokens, "epochs": args.epochs, "k": args.k, "vocab": args.vocab,
           "options": args.opt, "architecture": args.arch, "target_pass_s": round(result.prepare_seconds, 1),
           "train_s": round(result.train_seconds, 1), "wall_s": round(time.monotonic() - start, 1),
           "steps": result.steps, "train_acc": result.train_accuracy,
           **{k: round(v, 3) for k, v in result.acceptance.items()}}
    ROWS.parent.mkdir(parents=True, exist_ok=True)
    with ROWS.open("a") as fh:
        fh.write(json.dumps(row) + "\n")
    print("ROW " + json.dumps(row))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="step", required=True)
    s = sub.add_parser("synthesize", help="greedy continuations of training prompts, batched")
    s.add_argument("out")
    s.add_argument("--prompts", type=int, default=480)
    s.add_argument("--max-tokens", type=int, default=96)
    s.add_argument("--batch", type=int, default=16)
    s.add_argument("--chunk", type=int, default=160)
    s.add_argument("--threads", type=int, default=2)
    s.add_argument("--first", type=Path, default=None, help="a data file whose prompts come first, in order")
    t = sub.add_parser("train", help="train an EAGLE-3 head on a data file, measure held-out acceptance")
    t.add_argument("data")
    t.add_argument("--records", type=int, default=0, help="the first N records only (0: all)")
    t.add_argument("--tag", required=True)
    t.add_argument("--epochs", type=float, default=3.0)
    t.add_argument("--lr", type=float, default=1e-3)
    t.add_argument("--batch", type=int, default=4)
    t.add_argument("--seq-len", type=int, default=256)
    t.add_argument("--vocab", type=int, default=8192)
    t.add_argument("--k", type=int, default=3)
    t.add_argument("--eval", type=int, default=16, help="held-out HumanEval problems 0..N-1")
    t.add_argument("--eval-tokens", type=int, default=64)
    t.add_argument("--opt", action="append", default=[], help="a ModelOpt eagle option, key=json")
    t.add_argument("--arch", action="append", default=[], help="an eagle_architecture_config field, key=json")
    args = parser.parse_args()
    synthesize(args) if args.step == "synthesize" else train(args)


if __name__ == "__main__":
    main()
