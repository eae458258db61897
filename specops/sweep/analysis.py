"""What a sweep's cells say: where speculation stops paying per series (a draft length, or a setting: a draft
length with other method knobs), and the best series per concurrency."""
from __future__ import annotations

import math
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from specops.results.figures import figure, interval_text
from specops.results.model import RunResult, Status
from specops.sweep.grid import setting_label


class Cell(BaseModel):
    """One measured point of the grid: the speculative variant at draft length k (and `setting`, its series' other
    method overrides) against the base, both at `concurrency`."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    k: int
    setting: tuple[str, ...] = ()
    concurrency: int
    speedup: float | None
    speedup_low: float | None
    speedup_high: float | None
    spec_tok_s: float | None
    base_tok_s: float | None
    mean_acceptance_length: float | None  # tokens per verification step: accepted drafts + the target's own
    position_rates: list[float] | None
    run_uid: str | None
    status: str
    # Each category's speedup (point, low, high) where the cell's prompts have categories
    categories: dict[str, tuple[float, float | None, float | None]] = {}
    # The speedup the replay predicted for the cell (point, low, high) at its load's step cost; None: no cost
    predicted: tuple[float, float | None, float | None] | None = None

    @classmethod
    def from_result(cls, k: int, c: int, result: RunResult, setting: tuple[str, ...] = ()) -> Cell:
        s = result.speedup
        return cls(
            k=k, setting=setting, concurrency=c,
            speedup=s.point if s else None, speedup_low=s.low if s else None, speedup_high=s.high if s else None,
            spec_tok_s=figure(result, "speculative", "metrics", "output_token_throughput_tok_s"),
            base_tok_s=figure(result, "base", "metrics", "output_token_throughput_tok_s"),
            mean_acceptance_length=figure(result, "speculative", "acceptance", "mean_accepted_per_step"),
            position_rates=figure(result, "speculative", "acceptance", "position_rates"),
            run_uid=result.uid, status=result.status.value,
            categories={f.category: (f.speedup.point, f.speedup.low, f.speedup.high)
                        for f in (result.workload.categories if result.workload else []) if f.speedup},
            predicted=(g.point, g.low, g.high) if (g := result.predicted and result.predicted.speedup) else None,
        )

    @property
    def label(self) -> str:
        """Its series in the table's words: K=4, or K=4 min=1 max=5."""
        return setting_label(self.k, self.setting)

    @property
    def usable(self) -> bool:
        """Counts for crossover and best K: measured, and lossless (an INVALID run's speed is not a result)."""
        return self.status == Status.OK.value and self.speedup is not None and math.isfinite(self.speedup)

    @property
    def has_interval(self) -> bool:
        return self.speedup_low is not None and self.speedup_high is not None


class Pays(StrEnum):
    CROSSES = "crosses"  # pays at low concurrency, stops paying between two measured ones
    ALWAYS = "always"  # still pays at the largest concurrency measured
    NEVER = "never"  # pays at no measured concurrency
    NO_DATA = "no-data"  # no usable cell for this K


class Crossover(BaseModel):
    """Where speculation at draft length k stops paying (speedup falls to 1.0).

    Interpolated linearly in log2(concurrency): sweeps step concurrency geometrically (1, 2, 4, 8), and
    batching costs grow with the batch's size class rather than its count, so a straight line between 4
    and 8 in linear space would place the crossing too late."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    k: int
    setting: tuple[str, ...] = ()
    pays: Pays
    concurrency: float | None  # the crossing (CROSSES); the smallest measured concurrency (NEVER); else None
    max_measured: int | None
    note: str | None = None

    def text(self) -> str:
        if self.pays is Pays.CROSSES:
            return f"{self.concurrency:.1f}"
        if self.pays is Pays.ALWAYS:
            return f"> {self.max_measured} (pays at every concurrency measured)"
        if self.pays is Pays.NEVER:
            return f"never pays (speedup <= 1.0 from concurrency {self.concurrency:g})"
        return "no data"


def by_series(cells: list[Cell]) -> dict[str, list[Cell]]:
    """The cells per series (its label), each series' by concurrency, the series in the order first given."""
    out: dict[str, list[Cell]] = {}
    for cell in sorted(cells, key=lambda c: c.concurrency):
        out.setdefault(cell.label, []).append(cell)
    order = list(dict.fromkeys(c.label for c in cells))
    return {label: out[label] for label in order}


def _crossing(a: Cell, b: Cell) -> float:
    """Concurrency where the speedup, linear in log2(concurrency) between a (> 1) and b (<= 1), is 1.0."""
    t = (a.speedup - 1.0) / (a.speedup - b.speedup)
    x = math.log2(a.concurrency) + t * (math.log2(b.concurrency) - math.log2(a.concurrency))
    return 2.0 ** x


def crossover_of(cells: list[Cell]) -> Crossover:
    """One series' crossover (its cells by concurrency)."""
    usable = [c for c in cells if c.usable]
    largest = max((c.concurrency for c in cells), default=None)
    k = {"k": cells[0].k, "setting": cells[0].setting}
    if not usable:
        return Crossover(**k, pays=Pays.NO_DATA, concurrency=None, max_measured=largest)
    if all(c.speedup <= 1.0 for c in usable):
        return Crossover(**k, pays=Pays.NEVER, concurrency=float(usable[0].concurrency), max_measured=largest)
    note = None if usable[0].speedup > 1.0 else (f"does not pay at concurrency {usable[0].concurrency}; "
                                                 "pays only from a higher one")
    for a, b in zip(usable, usable[1:]):
        if a.speedup > 1.0 >= b.speedup:
            again = [c.concurrency for c in usable if c.concurrency > b.concurrency and c.speedup > 1.0]
            if again:
                note = f"pays again at concurrency {', '.join(map(str, again))} (noisy, or not monotone)"
            return Crossover(**k, pays=Pays.CROSSES, concurrency=_crossing(a, b), max_measured=largest, note=note)
    return Crossover(**k, pays=Pays.ALWAYS, concurrency=None, max_measured=usable[-1].concurrency, note=note)


def crossover(cells: list[Cell]) -> dict[str, Crossover]:
    """Per series (its label, e.g. K=4): where speculation stops paying as concurrency grows."""
    return {label: crossover_of(group) for label, group in by_series(cells).items()}


class Choice(BaseModel):
    """The series a sweep recommends at one concurrency, its draft length (None: serve without speculation) and
    `setting` (its other method overrides), and why."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    k: int | None
    why: str
    setting: tuple[str, ...] = ()


def _shown(cell: Cell) -> str:
    shown = interval_text(cell.speedup, cell.speedup_low, cell.speedup_high)
    return f"{cell.label} {shown}" + ("" if cell.has_interval else " (no interval)")


def _overlap(a: Cell, b: Cell) -> bool:
    """The two cells' intervals cannot be told apart (a cell without an interval cannot be told from any)."""
    if not (a.has_interval and b.has_interval):
        return True
    return a.speedup_low <= b.speedup_high and b.speedup_low <= a.speedup_high


def _chosen(cell: Cell, why: str) -> Choice:
    return Choice(k=cell.k, setting=cell.setting, why=why)


def choose(cells: list[Cell]) -> Choice:
    """One concurrency's choice among the series (Ks, or settings). One is named only where its 95% interval lies
    above 1.0 (it beats the base) and apart from the others'; where the best one's interval overlaps others', the
    shortest K of them that beats the base (the same speed, as far as the measurement can tell, for less drafting
    work; of equal Ks, the first given)."""
    usable = sorted((c for c in cells if c.usable), key=lambda c: c.k)
    if not usable:
        return Choice(k=None, why="no usable cell (failed, invalid or not measured)")
    best = max(usable, key=lambda c: (c.speedup, -c.k))
    if best.speedup <= 1.0:
        return Choice(k=None, why=f"no draft length beat the base (best {_shown(best)})")
    if not best.has_interval or best.speedup_low <= 1.0:
        return Choice(k=None, why=f"cannot tell {_shown(best)} from the base (1.00x)")
    tied = [c for c in usable if c is not best and _overlap(c, best)]
    paying = [c for c in [best, *tied] if c.has_interval and c.speedup_low > 1.0]
    pick = min(paying, key=lambda c: c.k)
    if not tied:
        other = "setting" if any(c.setting for c in usable) else "K"
        others = f", apart from every other {other}" if len(usable) > 1 else ""
        return _chosen(best, f"{_shown(best)}: beats the base{others}")
    group = [c for c in usable if c is best or any(c is t for t in tied)]  # by K, then as given
    names = [c.label for c in group]
    apart = " from ".join(names) if len(names) == 2 else f"{', '.join(names[:-1])} and {names[-1]} apart"
    return _chosen(pick, f"cannot tell {apart} ({'; '.join(map(_shown, group))}): {pick.label}, the shortest of "
                         "them that beats the base")


def choose_k(cells: list[Cell]) -> dict[int, Choice]:
    """Per concurrency: the draft length to serve there, by the rule of `choose`."""
    return {c: choose([cell for cell in cells if cell.concurrency == c])
            for c in sorted({cell.concurrency for cell in cells})}


def best_k(cells: list[Cell]) -> dict[int, int | None]:
    """Per concurrency: the draft length `choose_k` names, None where none is shown to beat the base."""
    return {c: choice.k for c, choice in choose_k(cells).items()}
