from specops.bench.prompts import load_prompts
from specops.pipeline.check import check_prompts
from specops.profile.loader import load_profile


def test_check_prompts_follow_the_benchmark_prompts():
    p = load_profile("ngram-local", ["benchmark.num_requests=5", "benchmark.warmup_requests=1",
                                     "comparison.lossless_prompts=3"]).profile
    assert check_prompts(p.benchmark, p.comparison) == load_prompts("humaneval")[6:9]


def test_check_prompts_wrap_to_the_start_when_the_source_is_short():
    p = load_profile("ngram-local", ["benchmark.num_requests=200", "comparison.lossless_prompts=2"]).profile
    assert check_prompts(p.benchmark, p.comparison) == load_prompts("humaneval")[:2]
