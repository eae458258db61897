"""The catalogue of figures (specops/results/figures.py): each figure reads the field it names from the variant
it is asked about, and every table names it by the catalogue's one label (issue 52: accepted tokens per step had
three names, "accepted/step", "accept len" and "accepted tokens per step", and a sweep's cells said "al")."""
from __future__ import annotations

import math

from specops.profile.loader import load_profile
from specops.regression.metrics import METRICS
from specops.report.tables import markdown_table
from specops.results.figures import FIGURES, MISSING
from specops.results.history import format_compare
from specops.sweep.analysis import Cell, best_k, choose_k, crossover
from specops.sweep.schedule import recommend
from specops.sweep.table import format_compare as format_profiles
from specops.sweep.table import format_sweep, sweep_markdown
from specops.upgrade.table import measurement_rows
from tests.results_factory import run_result

OLD_NAMES = ("accept len", "accepted tokens per step", "mean acceptance length", " al ", "tok/s", "accept ")


def test_each_figure_reads_its_own_field_of_the_variant_asked_for():
    result = run_result(spec_tok_s=21.8, base_tok_s=16.0)
    rate = FIGURES["tokens_per_s"]
    assert (rate.of(result, "speculative"), rate.of(result, "base")) == (21.8, 16.0)  # not one arm for both
    spec = result.variant("speculative")
    for fig in FIGURES.values():
        assert fig.of(result, "speculative") == getattr(getattr(spec, fig.part), fig.attr), fig.key
    assert FIGURES["accepted_per_step"].of(result, "speculative") == spec.acceptance.mean_accepted_per_step > 1
    assert FIGURES["accepted_per_step"].of(result, "base") is None  # the base drafts nothing
    assert FIGURES["tokens_per_s"].of(None, "speculative") is None


def test_an_acceptance_its_source_could_not_give_is_shown_missing_not_zero():
    result = run_result()
    spec = result.variant("speculative")
    assert FIGURES["accepted_per_step"].on(spec) is not None
    unavailable = spec.model_copy(update={"acceptance": spec.acceptance.model_copy(update={"available": False})})
    assert FIGURES["accepted_per_step"].on(unavailable) is None and FIGURES["acceptance"].on(unavailable) is None
    assert FIGURES["accepted_per_step"].cell(None) == MISSING and FIGURES["tokens_per_s"].cell(math.nan) == MISSING


def test_labels_are_one_per_figure_and_shown_with_their_unit():
    labels = [f.label for f in FIGURES.values()]
    assert len(labels) == len(set(labels))
    ttft = FIGURES["ttft_p50"]
    assert (ttft.header, ttft.text(83.44), ttft.cell(83.44)) == ("TTFT p50 ms", "83.4 ms", "83.4")
    assert FIGURES["acceptance"].cell(0.625) == "62.5%"


def test_every_table_names_accepted_per_step_by_the_catalogue_label():
    label = FIGURES["accepted_per_step"].label
    a, b = run_result(speedup=1.36), run_result(speedup=1.2, spec_tok_s=19.2)
    cells = [Cell.from_result(1, 1, a), Cell.from_result(2, 1, b)]
    choices = choose_k(cells)
    why = {c: choice.why for c, choice in choices.items()}
    recommendation = recommend(load_profile("ngram-local"), best_k(cells), why)
    tables = {
        "report": markdown_table(a),
        "compare": format_compare(a, b),
        "upgrade": "\n".join(" | ".join(row) for row in measurement_rows(a, b)),
        "profiles": format_profiles([a, b]),
        "sweep": format_sweep(cells, crossover(cells), choices, recommendation),
        "sweep page": sweep_markdown(cells, crossover(cells), choices, recommendation),
        "regression": METRICS["mean_acceptance_length"].label,
    }
    for name, text in tables.items():
        assert label in text, name
        assert not [old for old in OLD_NAMES if old in text], (name, text)
    assert f"{label} {FIGURES['accepted_per_step'].cell(a.variant('speculative').acceptance.mean_accepted_per_step)}" \
        in tables["sweep"]  # the cell's own figure beside its label
