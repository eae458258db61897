"""Sweep and comparison outputs: the text tables carry the numbers, the plots are real PNGs."""
from __future__ import annotations

from specops.profile.loader import load_profile
from specops.report.plot import write_compare_plot
from specops.results.model import Status
from specops.sweep.analysis import Cell, best_k, choose_k, crossover
from specops.sweep.plot import write_sweep_plots
from specops.sweep.schedule import recommend
from specops.sweep.table import format_compare, format_sweep, sweep_markdown
from tests.results_factory import run_result

PNG = b"\x89PNG\r\n\x1a\n"


def cell(k: int, c: int, speedup: float, rates: list[float] | None = None, status: str = "ok") -> Cell:
    return Cell(k=k, concurrency=c, speedup=speedup, speedup_low=speedup - 0.07, speedup_high=speedup + 0.06,
                spec_tok_s=16.0 * speedup, base_tok_s=16.0 + c, mean_acceptance_length=1.0 + k / 2,
                position_rates=rates, run_uid=f"uid-{k}-{c}", status=status)


CELLS = [cell(1, 1, 1.21, [0.6]), cell(1, 2, 1.05, [0.58]), cell(1, 4, 0.93),
         cell(2, 1, 1.34, [0.6, 0.4]), cell(2, 2, 0.96), cell(2, 4, 0.81, status="invalid")]


def test_format_sweep_has_the_table_the_crossover_and_the_recommendation():
    choices = choose_k(CELLS)
    best, why = best_k(CELLS), {c: choice.why for c, choice in choices.items()}
    text = format_sweep(CELLS, crossover(CELLS), choices, recommend(load_profile("ngram-local"), best, why))
    assert "1.21x (1.14-1.27), accepted/step 1.50" in text and "1.34x (1.27-1.40), accepted/step 2.00" in text
    assert "INVALID 0.81x" in text
    # each cell with the base measured beside it, not one figure per concurrency
    assert "1.21x (1.14-1.27), accepted/step 1.50, base tokens/s 17.00" in text
    assert "0.93x (0.86-0.99), accepted/step 1.50, base tokens/s 20.00" in text
    # K=1 pays at 1, cannot tell at 2 (0.98-1.11), is slower at 4: no crossing is placed on the points
    assert "K=1: cannot tell where it stops paying: pays up to concurrency 1, cannot tell from the base at " \
           "concurrency 2 (K=1 1.05x (0.98-1.11)); slower at concurrency 4" in text
    assert "K=2: cannot tell where it stops paying" in text
    # K=1 (1.14-1.27) and K=2 (1.27-1.40) touch: the shorter; K=1 at 2 (0.98-1.11) reaches 1.00x: the base
    assert "concurrency 1: K=1: cannot tell K=1 from K=2 (K=1 1.21x (1.14-1.27); K=2 1.34x (1.27-1.40))" in text
    assert "concurrency 2: undecided: cannot tell K=1 1.05x (0.98-1.11) from the base" in text
    assert "concurrency 4: base (do not speculate): every K is slower than the base" in text
    assert "--set method.num_speculative_tokens=1" in text and "Recommendation for ngram-local (local)" in text
    assert "  note: concurrency 1: cannot tell K=1 from K=2" in text  # the recommendation says so too


def test_a_sweep_that_cannot_tell_says_so_everywhere_and_how_many_prompts_would():
    # the sweep: one concurrency, 4 prompts; K=1 1.08x (0.98-1.19), K=2 0.98x (0.88-1.09), each beside
    # a base of its own (6.92 and 5.68 tok/s). Its crossover said K=1 "pays at every concurrency measured" three
    # lines above "cannot tell K=1 ... from the base", and it recommended the base as if that were a finding.
    cells = [cell(1, 1, 1.08).model_copy(update={"speedup_low": 0.98, "speedup_high": 1.19, "base_tok_s": 6.92,
                                                 "units": 4}),
             cell(2, 1, 0.98).model_copy(update={"speedup_low": 0.88, "speedup_high": 1.09, "base_tok_s": 5.68,
                                                 "units": 4})]
    choices = choose_k(cells)
    undecided = {c: ch.why for c, ch in choices.items() if ch.undecided}
    r = recommend(load_profile("ngram-local"), best_k(cells), {c: ch.why for c, ch in choices.items()}, None,
                  undecided)
    text = format_sweep(cells, crossover(cells), choices, r)
    assert "pays" not in text and "base (speculation off)" not in text and "do not speculate" not in text, text
    assert text.count("cannot tell") >= 3  # the crossover of each K and the concurrency's line
    assert "concurrency 1: undecided, cannot tell K=1 1.08x (0.98-1.19) from the base (1.00x); about 8 prompts " \
           "would tell at this spread (--set benchmark.num_requests=8)" in text, text
    assert "base tokens/s 6.92" in text and "base tokens/s 5.68" in text  # each cell's own base


def test_the_uis_markdown_says_what_the_text_says_in_lines_that_wrap():
    choices = choose_k(CELLS)
    undecided = {c: ch.why for c, ch in choices.items() if ch.undecided}
    r = recommend(load_profile("ngram-local"), best_k(CELLS), {c: ch.why for c, ch in choices.items()}, None, undecided)
    text, markdown = format_sweep(CELLS, crossover(CELLS), choices, r), sweep_markdown(CELLS, crossover(CELLS), choices, r)
    assert "```" not in markdown  # the UI cuts a code block's lines at the page's edge
    assert "| K=1 | 1.21x (1.14-1.27) | 1.05x (0.98-1.11) | 0.93x (0.86-0.99) |" in markdown
    assert ("| K=2 | accepted/step 2.00, base tokens/s 17.00 | accepted/step 2.00, base tokens/s 18.00 "
            "| accepted/step 2.00, base tokens/s 20.00 |") in markdown
    said = [line.strip() for line in text.splitlines()[4:] if line.startswith("  ")]  # every line under a heading
    assert said and all(f"- {line}" in markdown for line in said)


def test_a_cell_not_measured_says_so():
    best = best_k(CELLS[:1])
    text = format_sweep(CELLS[:1] + [cell(2, 2, 1.1)], crossover(CELLS[:1]), choose_k(CELLS[:1]),
                        recommend(load_profile("ngram-local"), best))
    assert "not measured" in text


def test_format_compare_puts_every_profile_in_one_table():
    results = [run_result(profile="ngram-local", speedup=1.36, spec_tok_s=21.8, base_tok_s=16.0),
               run_result(profile="eagle3-local", speedup=0.91, spec_tok_s=14.6, base_tok_s=16.1),
               run_result(profile="medusa-local", status=Status.FAILED)]
    text = format_compare(results)
    lines = text.splitlines()
    assert "embedded:smollm2" in lines[0]
    assert lines[1].split()[:3] == ["profile", "method", "speedup"]
    row = next(line for line in lines if line.startswith("ngram-local"))
    assert "1.36x (1.31-1.41)" in row and "21.8" in row and "16.0" in row and "3.50" in row and "VALID" in row
    assert "0.91x" in next(line for line in lines if line.startswith("eagle3-local"))
    assert "FAILED" in next(line for line in lines if line.startswith("medusa-local"))


def test_sweep_plots_are_non_empty_pngs(tmp_path):
    paths = write_sweep_plots(CELLS, tmp_path / "plots")
    assert [p.name for p in paths] == ["sweep-speedup.png", "sweep-acceptance.png"]
    for path in paths:
        data = path.read_bytes()
        assert data.startswith(PNG) and len(data) > 5000


def test_compare_plot_is_a_png(tmp_path):
    results = [run_result(profile="ngram-local", speedup=1.36), run_result(profile="eagle3-local", speedup=0.9)]
    data = write_compare_plot(results, tmp_path / "compare.png").read_bytes()
    assert data.startswith(PNG) and len(data) > 5000


def test_a_sweep_of_settings_names_each_setting_in_its_rows_crossovers_and_choices(tmp_path):
    knobs = {1: ("method.prompt_lookup_min=1", "method.prompt_lookup_max=5"),
             3: ("method.prompt_lookup_min=3", "method.prompt_lookup_max=5")}
    cells = [cell(4, c, s).model_copy(update={"setting": knobs[m]})
             for m, c, s in ((1, 1, 1.6), (1, 2, 1.3), (3, 1, 1.2), (3, 2, 1.25))]
    choices = choose_k(cells)
    r = recommend(load_profile("ngram-vllm-serve-cpu"), best_k(cells), {c: ch.why for c, ch in choices.items()},
                  {c: ch.setting for c, ch in choices.items()})
    text = format_sweep(cells, crossover(cells), choices, r)
    # a row per setting
    assert "K=4 min=1 max=5  1.60x (1.53-1.66), accepted/step 3.00, base tokens/s 17.00  1.30x" in text
    assert "K=4 min=3 max=5  1.20x (1.13-1.26), accepted/step 3.00, base tokens/s 17.00  1.25x" in text
    assert "  K=4 min=1 max=5: > 2" in text and "  K=4 min=3 max=5: > 2" in text
    assert "Setting per concurrency" in text and "other settings'" in text
    assert "concurrency 1: K=4 min=1 max=5: K=4 min=1 max=5 1.60x" in text
    assert "--set method.prompt_lookup_min=1 --set method.prompt_lookup_max=5 --set method.num_speculative_tokens=4" \
        in text
    plots = write_sweep_plots(cells, tmp_path)
    assert plots and all(p.read_bytes().startswith(PNG) for p in plots)


def test_each_cell_shows_the_replays_prediction_beside_what_it_measured_and_the_categories_choice():
    measured = cell(2, 1, 1.5).model_copy(update={"speedup_low": 1.3, "speedup_high": 1.7, "predicted": (1.4, 1.2, 1.6),
                                                  "categories": {"qa": (1.1, 0.9, 1.3), "rag": (2.0, 1.8, 2.2)}})
    bare = cell(4, 1, 1.2).model_copy(update={"speedup_low": 1.1, "speedup_high": 1.3})
    cells = [measured, bare]
    choices = choose_k(cells)
    rec = recommend(load_profile("ngram-vllm-serve-cpu"), {c: ch.k for c, ch in choices.items()},
                    {c: ch.why for c, ch in choices.items()})
    text = format_sweep(cells, crossover(cells), choices, rec)
    assert "1.50x (1.30-1.70) (predicted 1.40x (1.20-1.60))" in text and "1.20x (1.10-1.30), accepted/step" in text
    markdown = sweep_markdown(cells, crossover(cells), choices, rec)
    assert "(predicted 1.40x (1.20-1.60))" in markdown and "**Per category" in markdown and "rag: K=2" in markdown
