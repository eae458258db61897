"""The optimizer loop every trainer shares: AdamW, warmup then cosine decay, progress with ETA."""
from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import torch

from specops.run.progress import Progress


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
