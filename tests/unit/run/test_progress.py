"""The progress callback's throttle: few reports reach the sink, and the last one always does."""
from __future__ import annotations

import threading

from specops.run.progress import Throttled, within


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def throttled(interval: float = 5.0):
    sent: list[tuple[float, str]] = []
    clock = Clock()
    return Throttled(lambda f, note: sent.append((f, note)), interval, clock=clock), sent, clock


def test_the_first_report_passes_and_later_ones_wait_for_the_interval():
    report, sent, clock = throttled()
    report(0.1, "a")
    for i in range(50):  # a burst: one line after another
        report(0.1 + i / 100, "burst")
    assert sent == [(0.1, "a")]
    clock.now += 5.0
    report(0.7, "later")
    assert sent[-1] == (0.7, "later") and len(sent) == 2


def test_completion_always_passes_once_even_inside_the_interval():
    report, sent, clock = throttled()
    report(0.2, "")
    report(1.0, "done")
    report(1.0, "again")
    clock.now += 60
    report(0.5, "after the end")  # a straggling line of a finished step
    assert sent == [(0.2, ""), (1.0, "done")]


def test_an_unchanged_fraction_is_not_sent_again():
    report, sent, clock = throttled(interval=0.0)
    report(0.3, "x")
    report(0.3, "x")
    clock.now += 1
    report(0.4, "y")
    assert sent == [(0.3, "x"), (0.4, "y")]


def test_fractions_are_clamped():
    report, sent, _ = throttled(interval=0.0)
    report(-2.0, "")
    report(7.0, "")
    assert sent == [(0.0, ""), (1.0, "")]


def test_reports_from_many_threads_reach_the_sink_throttled():
    sent: list[float] = []
    report = Throttled(lambda f, note: sent.append(f), min_interval_s=3600)
    threads = [threading.Thread(target=lambda k=k: [report(k / 10 + i / 1000, "") for i in range(50)])
               for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    report(1.0, "")
    assert len(sent) == 2 and sent[-1] == 1.0


def test_within_maps_a_round_onto_its_share_of_the_whole():
    seen: list[float] = []
    second_of_four = within(lambda f, note: seen.append(f), 0.25, 0.5)
    for fraction in (0.0, 0.5, 1.0, 3.0):
        second_of_four(fraction, "")
    assert seen == [0.25, 0.375, 0.5, 0.5]
