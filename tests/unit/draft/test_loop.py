"""The shared optimizer loop reports its steps to a progress callback."""
from __future__ import annotations

import torch

from specops.draft.loop import run_loop, shuffled_epochs


def test_progress_follows_the_steps_to_the_end():
    weight = torch.nn.Parameter(torch.zeros(2))
    batches = [torch.ones(2), -torch.ones(2), torch.full((2,), 2.0)]
    seen: list[tuple[float, str]] = []

    def step(batch):
        loss = ((weight - batch) ** 2).sum()
        return loss, {}

    stats = run_loop([weight], step, shuffled_epochs(batches, seed=0), epochs=2, steps_per_epoch=3, max_steps=5,
                     lr=0.1, log=lambda line: None, label="train toy",
                     progress=lambda fraction, note: seen.append((fraction, note)))
    assert stats.steps == 5
    assert [f for f, _ in seen] == [0.2, 0.4, 0.6, 0.8, 1.0]
    assert seen[-1][1].startswith("train toy: step 5/5, loss ")
