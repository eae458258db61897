"""The answer per category: each prompt's pair credited to its own category, the overall figure weighted by the mix
(and saying so), a category whose interval reaches 1.00x reported as "cannot tell", and the record's figures in the
report, comparison.csv and the plot."""
from __future__ import annotations

import numpy as np
import pytest

from specops.bench.sampling import Workload
from specops.bench.target import RequestKind
from specops.pipeline.backend import backend_for, tool_for
from specops.pipeline.summarize import RunFacts, measured_speedup, run_result
from specops.profile.loader import load_profile
from specops.report.tables import comparison_frame, report_markdown
from specops.report.writer import summary, write_report
from specops.results.categories import normalized_mix
from specops.results.metrics import RequestSample
from specops.results.model import VariantRecord
from specops.results.paired import Design
from specops.results.predicted import Predicted
from specops.run.rundir import RunDir

# Eight prompts, round robin over two categories: "code" pays 2x on every prompt, "chat" 1.00-1.04x
CATEGORIES = ["code", "chat"] * 4
SPEEDUPS = {"code": [2.0, 2.1, 1.9, 2.0], "chat": [1.0, 1.04, 0.97, 1.02]}
TOKENS = 32


def samples(categories: list[str]) -> tuple[list[RequestSample], list[RequestSample]]:
    """The base takes 1 s per request; the speculative arm 1/speedup, and reports its accepted drafts per step."""
    seen = {c: 0 for c in SPEEDUPS}
    spec, base = [], []
    for prompt, category in enumerate(categories):
        speedup = SPEEDUPS[category][seen[category]]
        seen[category] += 1
        steps = 10 if category == "code" else 20
        spec.append(RequestSample(prompt=prompt, round=0, latency_s=1.0 / speedup, output_tokens=TOKENS,
                                  spec_steps=steps, accepted_tokens=TOKENS - steps, draft_tokens=4 * steps))
        base.append(RequestSample(prompt=prompt, round=0, latency_s=1.0, output_tokens=TOKENS))
    return spec, base


def workload(categories: list[str | None]) -> Workload:
    return Workload(source="spec-bench", label="spec-bench (test)", prompts=[f"p{i}" for i in range(len(categories))],
                    categories=categories, warmup=0, requests=len(categories), check=[], conversations=True,
                    seed=0, request=RequestKind(True, "conversations: the chat endpoint"))


def facts(categories: list[str | None], design: Design = Design.REQUESTS, **more) -> RunFacts:
    spec, base = samples(CATEGORIES)
    variants = [VariantRecord(name="speculative", method="ngram", model="s", samples=spec),
                VariantRecord(name="base", method="none", model="b", samples=base)]
    return RunFacts(variants=variants, design=(design, None), workload=workload(categories), **more)


def test_each_prompts_pair_is_credited_to_its_own_category_and_a_swapped_category_is_caught():
    speedup, record = measured_speedup(facts(CATEGORIES), {})
    by = {f.category: f for f in record.categories}
    assert by["code"].speedup.point == pytest.approx(4 / sum(1 / s for s in SPEEDUPS["code"]))
    assert by["code"].verdict() == "faster" and by["chat"].verdict() == "cannot tell"
    assert (by["code"].prompts, by["chat"].prompts) == (4, 4)
    # measured acceptance from each category's own requests: 1 + accepted / steps with a draft
    assert by["code"].accepted_per_step == pytest.approx(1 + 22 / 10)
    assert by["chat"].accepted_per_step == pytest.approx(1 + 12 / 20)
    # the same requests, prompts 0 and 1 taken for each other's category: both categories' figures move
    swapped = ["chat", "code", *CATEGORIES[2:]]
    _, wrong = measured_speedup(facts(swapped), {})
    moved = {f.category: f for f in wrong.categories}
    assert moved["code"].speedup.point < by["code"].speedup.point and moved["code"].accepted_per_step < 3.2
    assert moved["chat"].speedup.point > by["chat"].speedup.point


def test_the_overall_figure_is_the_mixs_and_says_so():
    equal, record = measured_speedup(facts(CATEGORIES), {})
    assert record.mix == {"code": 0.5, "chat": 0.5} and "weighted equally" in record.mix_text()
    seconds = {c: np.mean([1 / s for s in SPEEDUPS[c]]) for c in SPEEDUPS}  # speculative seconds per base second
    assert equal.point == pytest.approx(1 / (0.5 * seconds["code"] + 0.5 * seconds["chat"]))
    chat_heavy, heavy = measured_speedup(facts(CATEGORIES), {"code": 1, "chat": 3})
    assert heavy.mix == {"code": 0.25, "chat": 0.75} and "benchmark.mix (code 25%, chat 75%)" in heavy.mix_text()
    assert chat_heavy.point == pytest.approx(1 / (0.25 * seconds["code"] + 0.75 * seconds["chat"]))
    assert chat_heavy.point < equal.point  # more of the kind that pays less
    assert chat_heavy.low < chat_heavy.point < chat_heavy.high and "stratified by its 2 categories" in \
        chat_heavy.resampled


def test_a_mix_weighted_interval_covers_the_true_mix_at_its_level():
    """Simulated prompts with a known per-category speedup and lognormal noise: the stratified interval of the
    mix covers the true mix's speedup in about 95% of runs."""
    rng = np.random.default_rng(3)
    truth = {"code": 1.8, "chat": 1.1}
    mix = {"code": 0.5, "chat": 0.5}
    true_mix = 1 / sum(w / truth[c] for c, w in mix.items())
    covered = 0
    for _ in range(400):
        spec, base = [], []
        for prompt, category in enumerate(CATEGORIES * 2):
            base_s = float(rng.lognormal(0, 0.3))
            spec_s = base_s / truth[category] * float(rng.lognormal(0, 0.15))
            spec.append(RequestSample(prompt=prompt, round=0, latency_s=spec_s, output_tokens=TOKENS))
            base.append(RequestSample(prompt=prompt, round=0, latency_s=base_s, output_tokens=TOKENS))
        from specops.results.categories import prompt_mix
        from specops.results.speedup import paired_speedup

        s = paired_speedup(spec, base, design=Design.REQUESTS, mix=prompt_mix(CATEGORIES * 2, mix))
        covered += s.low <= true_mix <= s.high
    assert 0.91 <= covered / 400 <= 0.99, covered / 400


def test_without_categories_the_speedup_is_the_pooled_one_and_no_mix_is_claimed():
    pooled, record = measured_speedup(facts([None] * 8), {})
    assert record.categories == [] and record.mix == {} and record.mix_text() == ""
    spec, base = samples(CATEGORIES)
    assert pooled.point == pytest.approx(sum(b.latency_s for b in base) / sum(s.latency_s for s in spec))
    assert "stratified" not in pooled.resampled


def test_round_blocks_give_each_category_its_interval_over_rounds():
    spec, base = samples(CATEGORIES)
    again = [s.model_copy(update={"round": 1, "latency_s": s.latency_s * 1.05}) for s in spec]
    f = facts(CATEGORIES, Design.ROUNDS)
    f.variants[0] = f.variants[0].model_copy(update={"samples": spec + again})
    f.variants[1] = f.variants[1].model_copy(update={"samples": base + [b.model_copy(update={"round": 1})
                                                                       for b in base]})
    _, record = measured_speedup(f, {})
    assert all(c.speedup.rounds == 2 and c.speedup.resampled.startswith("rounds") for c in record.categories)


def test_the_report_csv_plot_and_summary_carry_each_category(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECOPS_ARTIFACTS", str(tmp_path))
    loaded = load_profile("ngram-vllm-serve-cpu")
    predicted = Predicted(setting="ngram min 2 max 3 K 4", accepted_per_step=2.5, tokens_per_step=2.4, source="test",
                          by_category={"code": 3.1, "chat": 1.7})
    result = run_result(loaded, RunDir.create("ngram-vllm-serve-cpu", "r"), backend_for(loaded.profile),
                        tool_for(loaded.profile), facts(CATEGORIES, predicted=predicted))
    assert result.workload.api == "chat" and result.workload.prompt_categories == CATEGORIES
    md = report_markdown(result)
    assert "| code | 4 | 50% | 2.00x (" in md and "| faster | 3.20 (predicted 3.10) |" in md
    assert "| chat | 4 | 50% |" in md and "| cannot tell | 1.60 (predicted 1.70) |" in md
    assert "over 2 categories, weighted equally" in md
    frame = comparison_frame(result)
    rows = frame[frame["category"].notna()].set_index("category")
    assert rows.loc["code", "predicted_accepted_per_step"] == 3.1 and rows.loc["chat", "category_prompts"] == 4
    assert "per category: code 2.00x (" in summary(result) and "cannot tell" in summary(result)
    files = write_report(result, tmp_path / "run")
    assert files.plot_png.stat().st_size > 0
    assert normalized_mix({}, []) == ({}, "")


def test_a_mix_that_leaves_a_category_out_weighs_only_the_rest_and_one_naming_none_falls_back_to_equal():
    code_only, record = measured_speedup(facts(CATEGORIES), {"code": 2})
    alone, _ = measured_speedup(facts(["code", None] * 4), {})
    assert record.mix == {"code": 1.0} and "benchmark.mix (code 100%)" in record.mix_text()
    assert code_only.point == pytest.approx(alone.point)  # the chat prompts weigh nothing
    _, none_named = measured_speedup(facts(CATEGORIES), {"poetry": 1})
    assert none_named.mix == {"code": 0.5, "chat": 0.5} and "names none of the categories measured" in \
        none_named.mix_text()


def test_the_categories_are_those_of_the_requests_measured_in_any_round():
    """A later round measures the warm-up's prompt too (the tool wraps around): its category is counted."""
    f = facts(["warm", *CATEGORIES[1:]])  # prompt 0 belongs to a category only it has
    _, record = measured_speedup(f, {})
    assert set(record.mix) == {"warm", "code", "chat"} and record.mix["warm"] == pytest.approx(1 / 3)


def test_a_mix_naming_a_category_the_file_lacks_is_refused_at_load():
    from specops.profile.errors import ProfileError
    from tests.reference import REFERENCE

    with pytest.raises(ProfileError, match=r"benchmark.mix: \['poetry'\] not among the categories of"):
        load_profile("ngram-vllm-serve-cpu", [f"benchmark.prompts={REFERENCE / 'spec_bench' / 'question.jsonl'}",
                                              "benchmark.mix={poetry: 1}"])
