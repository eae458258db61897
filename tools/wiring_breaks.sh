#!/usr/bin/env bash
# The one-line breaks of the lossless check and the speedup interval that once passed every unit
# test (issue 27): each is applied in turn, the fast tests of pipeline/ and results/ run, and the
# file is restored. Every break must print a FAILED line; "0 failed" means a guard is gone.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
break_and_test() {  # file sed-expression label
  cp "$1" "$1.wiring-bak"
  sed -i "$2" "$1"
  if cmp -s "$1" "$1.wiring-bak"; then
    echo "== $3: the break no longer applies (the code moved): update this script"
  else
    echo "== $3"
    "$PY" -m pytest tests/unit/pipeline tests/unit/results -m "not integration and not slow" -q -p no:cacheprovider \
      -n 0 2>&1 | grep -E "^FAILED|[0-9]+ (passed|failed)"
  fi
  mv "$1.wiring-bak" "$1"
}
break_and_test specops/pipeline/check.py 's/        if b == s:/        if b.strip() == s.strip():/' \
  "outputs compared after strip()"
break_and_test specops/pipeline/check.py 's/        mismatches += 1/        mismatches = 1/' \
  "mismatch count capped at one"
break_and_test specops/results/speedup.py \
  's/    t = float(stats.t.ppf(1 - (1 - level) \/ 2, df=len(ids) - 1))/    t = float(stats.t.ppf(1 - (1 - 0.90) \/ 2, df=len(ids) - 1))/' \
  "a 90% interval labelled with the recorded level (95%)"
break_and_test specops/results/speedup.py \
  's/        low, high, resampled = _t_interval(units, \[r for _, r in keys\], point, level, "rounds",/        low, high, resampled = _t_interval(units, [p for p, _ in keys], point, level, "rounds",/' \
  "round blocks resampled by prompt (the requests of a block taken as independent)"
break_and_test specops/pipeline/summarize.py \
  's/throughput_ratio=throughput, design=facts.design\[0\])/throughput_ratio=throughput)/' \
  "the run's pairing design not passed to the speedup (interleaved runs analysed as blocks)"
break_and_test specops/pipeline/summarize.py \
  's/    if verdict is Verdict.INVALID and require_lossless:/    if verdict is Verdict.INVALID and not require_lossless:/' \
  "require_lossless negated where the status is decided"
break_and_test specops/pipeline/summarize.py \
  's/    status = status_of(verdict, p.comparison.require_lossless)/    status = status_of(verdict, not p.comparison.require_lossless)/' \
  "require_lossless negated where run_result passes it"
