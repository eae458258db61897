from specops.pipeline.check import compare_outputs


def test_identical_outputs_are_valid():
    r = compare_outputs(["a b", "c"], ["a b", "c"])
    assert r.valid and r.compared == 2 and r.first is None


def test_first_divergence_is_recorded():
    r = compare_outputs(["same", "def f(x):\n    return x"], ["same", "def f(x):\n    return y"])
    assert not r.valid and r.mismatches == 1
    assert r.first.prompt_index == 1 and r.first.position == len("def f(x):\n    return ")
    assert r.first.base.endswith("x") and r.first.speculative.endswith("y")


def test_prefix_output_diverges_at_the_shorter_end():
    r = compare_outputs(["abc"], ["abcdef"])
    assert r.first.position == 3


def test_count_mismatch_is_invalid():
    r = compare_outputs(["a"], [])
    assert not r.valid and "counts differ" in r.reasons[0]


def test_outputs_that_differ_only_in_whitespace_differ():
    # A speculative server that adds a newline or a space has changed the output: a check blind to
    # whitespace would call a lossy server lossless.
    for base, spec in (("x = 1\n", "x = 1"), ("a  b", "a b"), ("\tdef f():", "    def f():")):
        r = compare_outputs([base], [spec])
        assert not r.valid and r.mismatches == 1, (base, spec)


def test_every_differing_prompt_is_counted():
    r = compare_outputs(["a", "b", "c", "d"], ["a", "B", "C", "D"])
    assert r.mismatches == 3 and r.compared == 4 and r.first.prompt_index == 1


def _workload(prompts: int, warmup: int = 1, requests: int | None = None):
    from specops.bench.sampling import Workload

    texts = [f"p{i}" for i in range(prompts)]
    return Workload(source="s", label="s", prompts=texts, categories=[None] * prompts, warmup=warmup,
                    requests=prompts - warmup if requests is None else requests, check=[], conversations=False)


def test_the_benchmarks_own_answers_are_the_check_and_a_mismatch_in_any_measured_prompt_is_invalid():
    from specops.pipeline.check import benchmark_answers, compare_checked

    w = _workload(9)  # warm-up p0, measured p1..p8
    answers = {i: f"answer {i}" for i in range(1, 9)}
    base = benchmark_answers(answers, w, 64)
    assert base.prompts == list(range(1, 9)) and base.source == ("the benchmark's own answers: 8 measured prompts x "
                                                                 "64 tokens")
    for changed in range(1, 9):  # whichever measured prompt differs, the run is INVALID, and the place is named
        spec = benchmark_answers({**answers, changed: answers[changed] + "!"}, w, 64)
        result = compare_checked(base, spec)
        assert not result.valid and result.mismatches == 1 and result.first.prompt_index == changed - 1
    assert compare_checked(base, benchmark_answers(dict(answers), w, 64)).valid


def test_a_tool_that_kept_no_text_for_some_measured_prompt_falls_back_to_a_separate_check():
    from specops.pipeline.check import benchmark_answers, compare_checked, separate_check

    w = _workload(9)
    assert benchmark_answers({i: "a" for i in range(1, 8)}, w, 64) is None  # p8's answer missing
    assert benchmark_answers({}, w, 64) is None
    wrapped = _workload(4, warmup=1, requests=5)  # the tool wraps around onto the warm-up prompt: it is measured too
    assert benchmark_answers({i: "a" for i in range(1, 4)}, wrapped, 8) is None
    assert benchmark_answers({i: "a" for i in range(4)}, wrapped, 8).prompts == [0, 1, 2, 3]
    separate = separate_check(["x", "y"], 48, "genai-perf keeps no answers")
    assert separate.source == "a separate check of 2 prompts x 48 tokens (genai-perf keeps no answers)"
    mixed = compare_checked(benchmark_answers({i: "a" for i in range(1, 9)}, w, 64), separate)
    assert not mixed.valid and "not to the same prompts" in mixed.reasons[0]
