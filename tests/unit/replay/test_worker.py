"""The replay's greedy verification loop (specops/replay/worker.py), with stand-in proposers: what a step accepts,
what it emits, and what K allows."""
from __future__ import annotations

from specops.replay.worker import replay


class Fixed:
    """Proposes the same draft every step, whatever the context; records what it was fed."""

    def __init__(self, draft):
        self.draft, self.fed, self.began, self.ended = list(draft), [], None, False

    def begin(self, prompt):
        self.began = list(prompt)

    def extend(self, tokens):
        self.fed += list(tokens)

    def propose(self, context, k):
        return self.draft[:k]

    def end(self):
        self.ended = True


class Oracle(Fixed):
    """Proposes the true continuation (`truth`), shifted by `wrong_at` where a wrong token is put."""

    def __init__(self, truth, wrong_at=None):
        super().__init__([])
        self.truth, self.wrong_at = truth, wrong_at

    def propose(self, context, k):
        done = len(context) - self.prompt_len
        draft = list(self.truth[done:done + k])
        if self.wrong_at is not None and self.wrong_at < len(draft):
            draft[self.wrong_at] = -1
        return draft

    def begin(self, prompt):
        self.prompt_len = len(prompt)


def test_accepted_counts_only_up_to_the_first_mismatch():
    output = [5, 1, 2, 3, 4, 1, 2, 3, 4]
    # The first step's true continuation is 1 2 3 4: the draft 1 9 3 4 matches at 0 and 2-3, accepts only 1.
    counts = replay([7], output, Fixed([1, 9, 3, 4]), k=4)
    first = replay([7], output[:3], Fixed([1, 9]), k=2)
    assert first == {"steps": 1, "emitted": 2, "drafted_steps": 1, "drafted": 1, "accepted": 1}
    assert counts["accepted"] <= counts["drafted"]
    assert counts["emitted"] == len(output) - 1


def test_each_step_emits_the_targets_own_token_beside_what_it_accepts():
    output = list(range(10, 30))
    none = replay([1], output, Fixed([]), k=4)  # no drafts: one token per step
    assert none["steps"] == none["emitted"] == len(output) - 1 and none["drafted_steps"] == 0
    wrong = replay([1], output, Oracle(output, wrong_at=0), k=4)  # every draft rejected: still 1 token a step
    assert wrong["steps"] == len(output) - 1 and wrong["accepted"] == 0
    assert wrong["drafted_steps"] == wrong["steps"] - 1  # the last step has only the target's own token left


def test_a_perfect_proposer_gives_k_plus_one_tokens_per_step_exactly():
    output = list(range(100, 100 + 1 + 5 * 12))  # after the prefill's token, 12 steps of K + 1 = 5
    counts = replay([1, 2], output, Oracle(output), k=4)
    assert counts["steps"] == 12 and counts["accepted"] == 4 * 12
    assert counts["emitted"] / counts["steps"] == 5


def test_k_caps_the_acceptance():
    output = list(range(50, 50 + 1 + 3 * 20))
    for k in (1, 2):
        counts = replay([1], output, Oracle(output), k=k)
        assert counts["drafted"] <= k * counts["steps"]
        assert counts["emitted"] / counts["steps"] == k + 1


def test_a_repeated_sequence_is_drafted_from_its_own_past():
    """A proposer that copies the token after the last earlier occurrence of the last token (a 1-gram lookup):
    over a period-4 loop every step after the first period accepts K tokens."""
    class Lookup(Fixed):
        def propose(self, context, k):
            last = int(context[-1])
            earlier = [i for i in range(len(context) - 1) if int(context[i]) == last]
            return [int(t) for t in context[earlier[-1] + 1:earlier[-1] + 1 + k]] if earlier else []

    period = [1, 2, 3, 4]
    output = period * 10 + [1]  # 41 tokens: the prefill's 1, then 40
    counts = replay([9], output, Lookup([]), k=3)
    # Steps 1-3 find no earlier occurrence (tokens 1, 2, 3 are new; 4 too): one token each. From the second
    # period on every draft is right: 4 tokens a step over the remaining 36 tokens = 9 steps.
    assert counts["steps"] == 4 + 9
    assert counts["accepted"] == 3 * 9


def test_the_proposer_sees_the_prompt_then_every_emitted_token_in_order():
    output = [3, 1, 2, 3, 1]
    proposer = Fixed([1, 2])
    replay([8, 9], output, proposer, k=2)
    assert proposer.began == [8, 9] and proposer.fed == output and proposer.ended


def test_drafts_stop_where_the_known_output_ends():
    output = [1, 2, 3]
    counts = replay([0], output, Fixed([2, 3, 4, 5]), k=4)  # only 2 tokens are left after the prefill's
    assert counts["drafted"] == 1 and counts["emitted"] == 2


def test_a_last_steps_drafts_past_the_requests_end_count_where_the_truth_is_known():
    """vLLM verifies a request's last drafts past max_tokens and counts what it accepts: so does the replay, against
    the greedy tokens generated past the end; the request still emits only its own length."""
    output = [1, 2, 3, 4, 5, 6, 7]
    cut = replay([0], output[:3], Oracle(output), k=4)  # the truth ends with the request: drafts cut to 1
    past = replay([0], output, Oracle(output), k=4, length=3)
    assert (cut["accepted"], cut["drafted"]) == (1, 1)
    assert (past["steps"], past["accepted"], past["drafted"], past["emitted"]) == (1, 4, 4, 2)
