"""What every CPU trainer starts from: the frozen target, the data's sequences (conversations tokenized the way
the target will see them) and one frozen pass of the target over them, cached for every epoch (offline); then the
optimizer loop every trainer shares over those batches (AdamW, warmup then cosine decay, progress with ETA) and
the TrainResult it ends in."""
from __future__ import annotations

import math
import random
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from specops.bench.conversations import Conversation, DataFileError, read_conversations
from specops.draft.spec import TrainResult, TrainSpec
from specops.run.progress import Progress


@dataclass
class Training:
    spec: TrainSpec
    model: Any  # the target, every parameter frozen
    tokenizer: Any
    seqs: list[list[int]]  # the data's token ids, cut to spec.seq_len, in a seeded order
    cached: list[tuple] = field(default_factory=list)  # the target's pass, by cache()
    cache_s: float = 0.0  # how long that pass took

    @property
    def size(self) -> str:
        return f"{len(self.seqs)} sequences, {token_count(self.seqs)} tokens"

    @torch.no_grad()  # not inference_mode: the cached tensors feed autograd later
    def cache(self, aux_ids: Sequence[int] = (), pad_to: int | None = None) -> list[tuple]:
        """The target's pass, timed: per batch (input_ids, mask, final post-norm hidden, concatenated aux layer
        outputs|None), every batch right-padded to its longest or to `pad_to`."""
        start, cached = time.monotonic(), []
        for ids, mask in batches(self.seqs, self.spec.batch_size, pad_id(self.tokenizer, self.model), pad_to):
            out = self.model(input_ids=ids, attention_mask=mask, output_hidden_states=True, logits_to_keep=1)
            hs = out.hidden_states  # hs[i + 1]: layer i's output (what ModelOpt's hooks collect); hs[-1]: normed
            aux = torch.cat([hs[i + 1] for i in aux_ids], dim=-1).clone() if aux_ids else None
            cached.append((ids, mask, hs[-1].clone(), aux))
        self.cached, self.cache_s = cached, time.monotonic() - start
        return cached

    def loss_rows(self) -> torch.Tensor | None:
        """The target ids the loss covers (spec.loss_vocab_size most frequent); None: the whole vocabulary."""
        size, vocab = self.spec.loss_vocab_size, self.model.config.vocab_size
        return None if not size or size >= vocab else draft_vocabulary(self.seqs, size, vocab)

    def run(self, module: torch.nn.Module, step: Callable, log: Callable[[str], None],
            progress: Progress | None) -> LoopStats:
        """Train `module`'s trainable parameters with run_loop over the cached batches, in a new seeded order every
        epoch, as long as the spec says; the module is in train mode for the loop and in eval mode after it."""
        spec = self.spec
        params = [p for p in module.parameters() if p.requires_grad]
        module.train()
        stats = run_loop(params, step, shuffled_epochs(self.cached, spec.seed), epochs=spec.epochs,
                         steps_per_epoch=len(self.cached), max_steps=spec.max_steps, lr=spec.lr, log=log,
                         label=f"train {spec.mode}", progress=progress)
        module.eval()
        return stats

    def save_modelopt_state(self, model, out_dir: Path, name: str, module: torch.nn.Module) -> None:
        """ModelOpt's state and the trained module's weights in out_dir/modelopt/<name>.pth (to resume or inspect)."""
        import modelopt.torch.opt as mto

        (out_dir / "modelopt").mkdir(parents=True, exist_ok=True)
        torch.save({"modelopt_state": mto.modelopt_state(model), name: module.state_dict()},
                   out_dir / "modelopt" / f"{name}.pth")

    def result(self, export_dir: Path, stats: LoopStats) -> TrainResult:
        return TrainResult(mode=self.spec.mode, export_dir=export_dir, sequences=len(self.seqs),
                           tokens=token_count(self.seqs), steps=stats.steps, train_seconds=stats.seconds,
                           prepare_seconds=self.cache_s, final_loss=stats.final_loss,
                           train_accuracy=stats.last_metrics)


def prepare_training(spec: TrainSpec, target_dir: Path, data_path: Path) -> Training:
    """Torch seeded, the target loaded frozen and the data tokenized; Training.cache() then runs the target."""
    torch.manual_seed(spec.seed)
    model, tokenizer = load_target(target_dir, spec.threads)
    return Training(spec, model, tokenizer, load_sequences(data_path, tokenizer, spec.seq_len, spec.seed))


def load_target(model_dir: Path, threads: int):
    """(model, tokenizer) in fp32 on CPU, every parameter frozen."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(threads)
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32)
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return model, tokenizer


def pad_id(tokenizer, model) -> int:
    for value in (tokenizer.pad_token_id, model.config.pad_token_id, tokenizer.eos_token_id, 0):
        if value is not None:
            return int(value)
    return 0


def draft_vocabulary(seqs: Sequence[list[int]], size: int, vocab_size: int) -> torch.Tensor:
    """The `size` most frequent target ids in the data (ties: lower id), ascending.

    ModelOpt stores the mapping as d2t[draft_id] = target_id - draft_id; ascending order
    keeps it monotonic, as the published EAGLE-3 drafts do.
    """
    counts = Counter(t for s in seqs for t in s)
    ranked = sorted(range(vocab_size), key=lambda t: (-counts.get(t, 0), t))[:size]
    return torch.tensor(sorted(ranked), dtype=torch.long)


def load_sequences(path: Path, tokenizer, seq_len: int, seed: int = 0) -> list[list[int]]:
    """Token ids of every conversation in `path`, cut to `seq_len`, in a seeded order."""
    conversations = read_conversations(Path(path))
    seqs = [ids for ids in (_ids(c, tokenizer)[:seq_len] for c in conversations) if len(ids) >= 2]
    if not seqs:
        raise DataFileError(path, "no conversation has two or more tokens to train on")
    random.Random(seed).shuffle(seqs)
    return seqs


def _ids(conversation: Conversation, tokenizer) -> list[int]:
    turns = [{"role": t.role, "content": t.content} for t in conversation.turns]
    if conversation.text_format == "completion":
        # Raw prompt + raw continuation: exactly what the benchmark sends and the runtime sees.
        return list(tokenizer("".join(t["content"] for t in turns))["input_ids"])
    ids = tokenizer.apply_chat_template(turns, tokenize=True)
    return list(ids["input_ids"] if hasattr(ids, "keys") else ids)


def batches(seqs: Sequence[list[int]], batch_size: int, pad_id: int, pad_to: int | None = None):
    """(input_ids, attention_mask) tensors, right-padded to the batch's longest or to `pad_to`."""
    for start in range(0, len(seqs), batch_size):
        chunk = seqs[start:start + batch_size]
        width = pad_to or max(len(s) for s in chunk)
        ids = torch.full((len(chunk), width), pad_id, dtype=torch.long)
        mask = torch.zeros((len(chunk), width), dtype=torch.long)
        for row, seq in enumerate(chunk):
            ids[row, :len(seq)] = torch.tensor(seq)
            mask[row, :len(seq)] = 1
        yield ids, mask


def token_count(seqs: Sequence[list[int]]) -> int:
    return sum(len(s) for s in seqs)


@dataclass
class LoopStats:
    steps: int = 0
    seconds: float = 0.0
    losses: list[float] = field(default_factory=list)
    last_metrics: dict[str, float] = field(default_factory=dict)

    @property
    def final_loss(self) -> float:
        """Mean of the last ten steps' losses (one step's loss is noisy)."""
        tail = self.losses[-10:]
        return sum(tail) / len(tail) if tail else float("nan")


def shuffled_epochs(batches: list, seed: int) -> Callable[[int], Iterable]:
    """make_batches for run_loop: the same batches in a new seeded order every epoch."""

    def epoch(number: int) -> Iterable:
        order = list(range(len(batches)))
        random.Random(seed + number).shuffle(order)
        return (batches[i] for i in order)

    return epoch


def run_loop(params: list[torch.nn.Parameter], step_fn: Callable[[object], tuple[torch.Tensor, dict]],
             make_batches: Callable[[int], Iterable], *, epochs: float, steps_per_epoch: int,
             max_steps: int | None, lr: float, log: Callable[[str], None], label: str,
             progress: Progress | None = None) -> LoopStats:
    """Train `params` by calling step_fn(batch) -> (loss, metrics) over make_batches(epoch)."""
    total = max(1, math.ceil(epochs * steps_per_epoch))
    if max_steps is not None:
        total = min(total, max_steps)
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
    warmup = max(1, total // 20)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: _lr_factor(s, warmup, total))
    stats, start, every = LoopStats(), time.monotonic(), max(1, total // 10)
    epoch = 0
    while stats.steps < total:
        for batch in make_batches(epoch):
            loss, metrics = step_fn(batch)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            sched.step()
            opt.zero_grad(set_to_none=True)
            stats.steps += 1
            stats.losses.append(float(loss.detach()))
            stats.last_metrics = metrics
            if stats.steps % every == 0 or stats.steps == total:
                _progress(log, label, stats, total, start)
            if progress is not None:
                progress(stats.steps / total, f"{label}: step {stats.steps}/{total}, loss {stats.losses[-1]:.3f}")
            if stats.steps >= total:
                break
        epoch += 1
    stats.seconds = time.monotonic() - start
    return stats


def _lr_factor(step: int, warmup: int, total: int) -> float:
    if step < warmup:
        return (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))


def _progress(log, label: str, stats: LoopStats, total: int, start: float) -> None:
    elapsed = time.monotonic() - start
    eta = elapsed / stats.steps * (total - stats.steps)
    extra = " ".join(f"{k}={v:.3f}" for k, v in stats.last_metrics.items())
    log(f"{label}: step {stats.steps}/{total} loss {stats.final_loss:.3f} {extra} "
        f"({elapsed:.0f}s, eta {eta:.0f}s)")
