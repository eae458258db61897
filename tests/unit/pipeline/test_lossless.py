from specops.pipeline.lossless import compare_outputs


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
