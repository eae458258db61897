"""Incremental detokenization, stop strings, sampling and counters (no model)."""
from __future__ import annotations

import threading

import pytest
import torch

from specops.runtime.sampling import Sampler, SpecCounters, TextStream


class Bytes:
    def decode(self, ids, skip_special_tokens=False, clean_up_tokenization_spaces=False):
        return bytes(i for i in ids if i < 256).decode("utf-8", errors="replace")


def stream_all(ids, stop=None, step=1):
    stream, deltas = TextStream(Bytes(), stop), []
    for end in range(step, len(ids) + step, step):
        deltas.append(stream.push(ids[:end], final=end >= len(ids)))
        if stream.stopped:
            break
    return deltas, stream


def test_multibyte_chars_are_never_split():
    ids = list("héllo 你好 😀!".encode())
    deltas, _ = stream_all(ids)
    assert "".join(deltas) == "héllo 你好 😀!"
    assert not any("\ufffd" in d for d in deltas)


def test_final_flushes_a_truly_broken_tail():
    ids = list(b"ok") + [0xE4, 0xBD]
    assert "".join(stream_all(ids)[0]) == "ok\ufffd"


@pytest.mark.parametrize("step", [1, 2, 5])
def test_stop_string_cuts_output_before_it(step):
    ids = list(b"def f():\n    return 1\n\ndef g():\n")
    deltas, stream = stream_all(ids, stop=["\n\n", "never"], step=step)
    assert "".join(deltas) == "def f():\n    return 1"
    assert stream.stopped


def test_stop_string_split_over_tokens_is_not_leaked():
    deltas, _ = stream_all(list(b"abcSTOPdef"), stop=["STOP"])
    assert "".join(deltas) == "abc"
    assert all("S" not in d for d in deltas)


def test_earliest_stop_wins_and_empty_stops_are_ignored():
    deltas, _ = stream_all(list(b"xx-a-yy-b-"), stop=["-b-", "", "-a-"])
    assert "".join(deltas) == "xx"


def test_stop_at_the_very_start():
    deltas, stream = stream_all(list(b"END and more"), stop=["END"])
    assert "".join(deltas) == "" and stream.stopped


def test_greedy_sampler_is_argmax():
    logits = torch.tensor([0.1, 3.0, 2.9, -1.0])
    assert Sampler(0.0).pick(logits) == 1


def test_top_k_one_and_tiny_top_p_are_argmax():
    logits = torch.randn(50, generator=torch.Generator().manual_seed(1))
    best = int(torch.argmax(logits))
    assert all(Sampler(1.0, top_k=1, seed=s).pick(logits) == best for s in range(20))
    assert all(Sampler(1.0, top_p=1e-6, seed=s).pick(logits) == best for s in range(20))


def test_top_p_keeps_the_nucleus_only():
    logits = torch.log(torch.tensor([0.5, 0.3, 0.15, 0.05]))
    picks = {Sampler(1.0, top_p=0.75, seed=s).pick(logits) for s in range(300)}
    assert picks == {0, 1}


def test_seeded_sampling_is_reproducible():
    logits = torch.zeros(100)
    a = Sampler(1.0, seed=7)
    b = Sampler(1.0, seed=7)
    assert [a.pick(logits) for _ in range(10)] == [b.pick(logits) for _ in range(10)]


@pytest.mark.parametrize("kwargs", [{"temperature": -1}, {"top_p": 0}, {"top_p": 1.5}, {"top_k": -1}])
def test_sampler_rejects_bad_parameters(kwargs):
    with pytest.raises(ValueError):
        Sampler(**kwargs)


def test_counters_record_steps():
    c = SpecCounters()
    c.record_step(drafted=0, accepted=0, generated=1)
    c.record_step(drafted=3, accepted=2, generated=3, draft_s=0.25, verify_s=1.0)
    c.record_step(drafted=4, accepted=0, generated=1, draft_s=0.5, verify_s=0.5)
    assert c.snapshot() == {
        "num_drafts": 2, "num_draft_tokens": 7, "num_accepted_tokens": 2,
        "accepted_per_position": [1, 1, 0, 0], "num_steps": 3, "num_generated_tokens": 5,
        "draft_seconds": 0.75, "verify_seconds": 1.5,
    }


def test_counters_are_thread_safe():
    c = SpecCounters()

    def work():
        for _ in range(2000):
            c.record_step(drafted=2, accepted=1, generated=2)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    snap = c.snapshot()
    assert snap["num_steps"] == snap["num_drafts"] == 8000
    assert snap["num_accepted_tokens"] == snap["accepted_per_position"][0] == 8000
