"""`specops history` and `specops compare` as text: what each line says, for ok, invalid and failed runs."""
from __future__ import annotations

import re

from specops.results.history import RUN_FIELDS, WIDTH, format_compare, format_history
from specops.results.model import GpuRecord, Status
from specops.results.paired import Design
from specops.results.role import CALIBRATE, RunRole
from tests.results_factory import T0, run_result


def _line(text: str, label: str) -> str:
    return next(line for line in text.splitlines() if line[2:].startswith(label + " "))


def _field(text: str, label: str) -> tuple[str, str]:
    """A field's two values, with the lines a long value wraps onto joined back."""
    lines = text.splitlines()
    start = lines.index(_line(text, label))
    rows = lines[start:]
    values: list[list[str]] = [[], []]
    for i, line in enumerate(rows):
        name, left, *right = re.split(r" \|(?: |$)", line[2:])
        if i and name.strip():
            break
        values[0].append(left.strip())
        values[1].append(right[0].strip() if right else "")
    return " ".join(filter(None, values[0])), " ".join(filter(None, values[1]))


def test_history_lists_every_run_with_its_interval_and_status():
    ok = run_result(started_at=T0 + 3600, speedup=1.36)
    failed = run_result(status=Status.FAILED, started_at=T0 + 60, profile="eagle3-vllm", framework="vLLM 0.15.1")
    invalid = run_result(status=Status.INVALID, started_at=T0, speedup=0.91, spec_tok_s=14.6)
    lines = format_history([ok, failed, invalid]).splitlines()
    assert lines[0].split()[:3] == ["when", "(UTC)", "run"]
    assert len(lines) == 5  # header, rule, three runs in the order given
    ok_line, failed_line, invalid_line = lines[2:]
    assert ok_line.startswith("2026-01-01 13:00  " + ok.run_id)
    assert ok.speedup.low > 1  # the whole interval above 1.00x: "faster", the interval and the design
    assert "1.36x faster (95% interval 1.31-1.41; 4 prompts x 2 rounds, round blocks)" in ok_line
    assert "21.80/16.00" in ok_line and "62.5%" in ok_line
    assert "OK" in ok_line and "specops runtime" in ok_line
    assert failed.run_id in failed_line and "FAILED (serve)" in failed_line and "vLLM 0.15.1" in failed_line
    assert "interval" not in failed_line and not re.search(r"\d\.\d\dx", failed_line)  # a failed run: no speedup
    assert invalid.speedup.high < 1  # the whole interval below 1.00x: slower, said so
    assert "INVALID" in invalid_line and "0.91x, slower (95% interval 0.86-0.96;" in invalid_line
    assert "14.60/16.00" in invalid_line


def test_history_columns_line_up():
    lines = format_history([run_result(profile="p"), run_result(profile="a-much-longer-profile")]).splitlines()
    status_at = lines[0].index("status")
    assert all(line[status_at:status_at + 2] == "OK" for line in lines[2:])


def test_empty_history_says_so():
    assert format_history([]) == "no runs recorded"


def test_compare_marks_only_the_fields_that_differ():
    a = run_result(speedup=1.36, spec_tok_s=21.8)
    b = run_result(speedup=1.10, spec_tok_s=17.6, started_at=T0 + 86400, commit="fedcba9876543210")
    text = format_compare(a, b)
    assert a.run_id in text.splitlines()[0] and b.run_id in text.splitlines()[0]
    assert _line(text, "speedup").startswith("* ")
    assert _field(text, "speedup") == ("1.36x faster (95% interval 1.31-1.41; 4 prompts x 2 rounds, round blocks)",
                                       "1.10x faster (95% interval 1.05-1.15; 4 prompts x 2 rounds, round blocks)")
    assert _line(text, "tokens/s speculative").startswith("*")
    assert "21.8" in _line(text, "tokens/s speculative") and "17.6" in _line(text, "tokens/s speculative")
    assert _line(text, "specops").startswith("* ") and "fedcba9876" in _line(text, "specops")
    for same in ("profile", "tokens/s base", "acceptance speculative", "CPU s/1k tokens base", "lossless",
                 "method / backend", "framework", "host cpu"):
        assert _line(text, same).startswith("  "), same
    assert "62.5%" in _line(text, "acceptance speculative")
    assert "3.50" in _line(text, "accepted/step speculative")
    assert "8/8 equal" in _line(text, "lossless")


def test_compare_a_failed_run_with_an_ok_one():
    ok, failed = run_result(), run_result(status=Status.FAILED)
    text = format_compare(ok, failed)
    assert "failed / FAILED" in _line(text, "status / verdict") and _line(text, "status / verdict").startswith("*")
    assert _field(text, "failure") == ("-", "serve (speculative): TimeoutError: server not ready in 120 s")
    assert _line(text, "speedup").startswith("*")
    assert _field(text, "speedup") == ("1.36x faster (95% interval 1.31-1.41; 4 prompts x 2 rounds, round blocks)", "-")
    assert _field(text, "tokens/s base") == ("16.00", "-")
    assert "acceptance rate base" not in text  # neither run has base acceptance: no empty line for it


def test_compare_two_failed_runs_and_invalid_lossless():
    failed = run_result(status=Status.FAILED)
    assert "tokens/s" not in format_compare(failed, run_result(status=Status.FAILED))
    text = format_compare(run_result(), run_result(status=Status.INVALID))
    assert _field(text, "lossless") == ("8/8 equal", "2 of 8 differ (prompt 3, char 17)")
    assert _line(text, "lossless").startswith("* ")


def test_compare_fits_a_100_column_terminal_even_with_long_values():
    image = "nvcr.io/nvidia/tritonserver:25.02-trtllm-python-py3-with-a-very-long-custom-suffix"
    a = run_result(framework="TensorRT-LLM 1.2.1")
    a = a.model_copy(update={
        "served": a.served.model_copy(update={"image": image}),
        "host": a.host.model_copy(update={"gpus": [GpuRecord(index=0, name="NVIDIA H100 80GB HBM3", memory_gb=80.0),
                                                   GpuRecord(index=1, name="NVIDIA H100 80GB HBM3", memory_gb=80.0)],
                                          "driver": "550.54", "cuda": "12.4"})})
    text = format_compare(a, run_result())
    assert max(len(line) for line in text.splitlines()) <= WIDTH
    assert _field(text, "host gpu") == ("2x NVIDIA H100 80GB HBM3 (80 GB), driver 550.54, CUDA 12.4", "none")
    left, right = _field(text, "served image")
    assert left.replace(" ", "") == image and right == "-"  # wrapped over lines, nothing cut


def test_compare_warns_when_two_measurements_of_one_thing_disagree_beyond_their_intervals():
    # `compare-profiles ngram-local ngram-local` once printed 1.43x and 0.46x without a word.
    a = run_result(speedup=1.43)
    b = run_result(speedup=0.46, started_at=T0 + 600)
    text = format_compare(a, b)
    assert text.startswith("! A and B measured one thing (ngram-local: same settings, software and hardware)")
    warning = " ".join(text.split("\n\n")[0].split())  # the warning as one line, however it is wrapped
    assert "1.43x faster (95% interval 1.38-1.48;" in warning and "0.46x, slower (95% interval 0.41-0.51;" in warning
    assert all(len(line) <= WIDTH for line in text.splitlines())
    # overlapping intervals: no warning
    assert not format_compare(a, run_result(speedup=1.40)).startswith("!")
    # another commit, another image or other settings measured something else: a difference may be real
    other_commit = run_result(speedup=0.46, commit="fedcba9876543210")
    other_image = b.model_copy(update={"served": b.served.model_copy(update={"image_id": "sha256:" + "1" * 64})})
    other_settings = b.model_copy(update={"profile_sha256": "cd" * 32})
    for other in (other_commit, other_image, other_settings):
        assert not format_compare(a, other).startswith("!")


def _aa(point: float, day: int, covers: bool):
    result = run_result(speedup=point, started_at=T0 + day * 86_400).model_copy(update={"method": "none", "role": RunRole(kind=CALIBRATE)})
    low, high = (point - 0.05, point + 0.05) if covers else (point + 0.01, point + 0.1)
    return result.model_copy(update={"speedup": result.speedup.model_copy(update={"low": low, "high": high})})


def test_history_shows_the_aa_runs_coverage_of_one_day_by_day():
    runs = [_aa(1.0, 0, True), _aa(1.02, 0, False), _aa(0.99, 1, True), run_result(speedup=1.4, started_at=T0),
            _aa(1.0, 1, True).model_copy(update={"status": Status.FAILED})]
    text = format_history(runs)
    assert text.endswith("A/A coverage of 1.00x by 95% intervals, by day: 2026-01-01 1/2, 2026-01-02 1/1")
    lines = text.splitlines()
    assert "A/A holds 1.00x" in lines[2] and "A/A MISSES 1.00x" in lines[3] and "A/A" not in lines[5]
    assert "A/A coverage" not in format_history([run_result(speedup=1.4)])  # no A/A run, no line


def test_compare_shows_each_runs_pairing_design_and_marks_a_change():
    a = run_result(speedup=1.3)
    b = a.model_copy(update={"benchmark": a.benchmark.model_copy(update={"design": Design.REQUESTS})})
    assert next(x for x in format_compare(a, b).splitlines() if " benchmark " in x).startswith("*")  # differs
    benchmark = dict(RUN_FIELDS)["benchmark"]
    assert "x 2 rounds, round blocks, interleaved," in benchmark(a) and "x 2 rounds, requests interleaved," in benchmark(b)


def _on(result, cpu: str):
    return result.model_copy(update={"host": result.host.model_copy(update={"cpu_model": cpu})})


XEON = "Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz"


def test_compare_of_runs_on_two_cpu_models_warns_first_naming_both():
    a = run_result(speedup=1.30)
    b = _on(run_result(speedup=1.67, started_at=T0 + 600), XEON)
    text = format_compare(a, b)
    warning, table = text.split("\n\n", 1)
    assert warning.startswith("! These runs ran on 2 different CPU models:")
    flat = " ".join(warning.split())
    assert f"AMD EPYC 7B13 (A {a.run_id}); {XEON} (B {b.run_id})" in flat and "memory bandwidth" in flat
    assert table.startswith("  run ") and "host cpu" in table and _line(table, "host cpu").startswith("* ")
    assert all(len(line) <= WIDTH for line in text.splitlines())
    assert "CPU models" not in format_compare(a, run_result(speedup=1.32))  # one CPU model: no such warning
    # a run that measured nothing has no speed to mislead with
    assert not format_compare(a, _on(run_result(status=Status.FAILED), XEON)).startswith("!")


def test_history_of_runs_on_two_cpu_models_warns_before_the_table_naming_the_runs_of_each():
    epyc = [run_result(started_at=T0 + i) for i in range(8)]
    xeon = _on(run_result(started_at=T0 + 100), XEON)
    text = format_history([*epyc, xeon])
    warning, table = text.split("\n\n", 1)
    flat = " ".join(warning.split())
    assert flat.startswith("! These runs ran on 2 different CPU models: AMD EPYC 7B13 (")
    named = [r.run_id for r in epyc[:6]]
    assert f"AMD EPYC 7B13 ({', '.join(named)} and 2 more); {XEON} ({xeon.run_id})." in flat
    assert table.startswith("when (UTC)") and len(table.splitlines()) == 2 + 9
    assert format_history(epyc).startswith("when (UTC)")  # one CPU model: the table first, no warning


def test_a_run_whose_drafter_cache_was_primed_says_so_wherever_its_speedup_is_a_headline():
    """Issue 51: flagged in report.md and manifest.json only; the summary line, `history`, `compare` and the
    compare-profiles table took its replayed speedup as any other run's."""
    from specops.report.writer import summary
    from specops.results.metrics import DrafterCache
    from specops.sweep.table import format_compare as format_profiles

    plain = run_result(speedup=1.8)
    primed = plain.model_copy(update={"drafter_cache": DrafterCache(on=True, max_cached_requests=10000, primed=[
        "the lossless check ran the measured prompts first"])})
    said = "none to report: drafter cache primed"
    assert said in summary(primed) and said not in summary(plain)
    assert said in summary(primed).split(";")[1] and "measured 1.80x" in summary(primed)
    (row,) = [line for line in format_history([primed]).splitlines() if primed.run_id in line]
    assert "drafter cache primed" in row
    assert _field(format_compare(plain, primed), "speedup")[1].startswith(said)
    assert "drafter cache primed" in format_profiles([primed]) and "primed" not in format_profiles([plain])
