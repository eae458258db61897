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
