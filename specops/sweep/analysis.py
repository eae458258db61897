"""What a sweep's cells say: where speculation stops paying per series (a draft length, or a setting: a draft
length with other method knobs), and the best series per concurrency."""
from __future__ import annotations

import math
from enum import StrEnum
from itertools import takewhile

from pydantic import BaseModel, ConfigDict

from specops.results.figures import FIGURES, figure, interval_text
from specops.results.model import RunResult, Status
from specops.results.paired import Design
from specops.sweep.grid import setting_label
from specops.sweep.tell import would_tell


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
    # The interval's independent units: prompts (requests interleaved) or rounds, and how many (None: no speedup)
    unit: str = "prompts"
    units: int | None = None

    @classmethod
    def from_result(cls, k: int, c: int, result: RunResult, setting: tuple[str, ...] = ()) -> Cell:
        s = result.speedup
        unit = "prompts" if s is None or s.design is Design.REQUESTS else "rounds"
        return cls(
            k=k, setting=setting, concurrency=c,
            speedup=s.point if s else None, speedup_low=s.low if s else None, speedup_high=s.high if s else None,
            spec_tok_s=FIGURES["tokens_per_s"].of(result, "speculative"),
            base_tok_s=FIGURES["tokens_per_s"].of(result, "base"),
            mean_acceptance_length=FIGURES["accepted_per_step"].of(result, "speculative"),
            position_rates=figure(result, "speculative", "acceptance", "position_rates"),
            run_uid=result.uid, status=result.status.value, unit=unit,
            units=None if s is None else s.prompts if unit == "prompts" else s.rounds,
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

    @property
    def side(self) -> Side:
        """Where its interval lies against the base's 1.00x: the only judgement a sweep makes of a cell."""
        if self.has_interval and self.speedup_low > 1.0:
            return Side.PAYS
        if self.has_interval and self.speedup_high < 1.0:
            return Side.SLOWER
        return Side.UNCLEAR

    def would_tell(self, other: Cell | None = None) -> str:
        """About how many of its units would tell it from `other` (None: from the base), at the spread measured."""
        if not self.has_interval or (other is not None and not other.has_interval):
            return "no interval to size a rerun from"
        cells = [(c.speedup, c.speedup_high) for c in (self, other) if c is not None]
        return would_tell(self.units, self.unit, cells, against_base=other is None,
                          what="" if other is None else f" {self.label} from {other.label}")


class Side(StrEnum):
    PAYS = "pays"  # the whole interval above 1.00x
    SLOWER = "slower"  # the whole interval below 1.00x
    UNCLEAR = "cannot tell"  # the interval holds 1.00x, or there is none


class Pays(StrEnum):
    CROSSES = "crosses"  # pays at low concurrency, shown slower at a higher one
    ALWAYS = "always"  # pays at every concurrency from the first it pays at up to the largest measured
    NEVER = "never"  # shown slower at every measured concurrency
    CANNOT_TELL = "cannot-tell"  # neither: an interval that holds 1.00x where it would decide
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
    unclear: str | None = None  # CANNOT_TELL: where it cannot tell, and how many units would

    def text(self) -> str:
        if self.pays is Pays.CROSSES:
            return f"{self.concurrency:.1f}"
        if self.pays is Pays.ALWAYS:
            return f"> {self.max_measured} (pays at every concurrency measured)"
        if self.pays is Pays.NEVER:
            return f"never pays (slower than the base at every concurrency measured, from {self.concurrency:g})"
        if self.pays is Pays.CANNOT_TELL:
            return self.unclear or "cannot tell"
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


def _unclear(cell: Cell, paid_up_to: Cell | None, slower: list[Cell]) -> str:
    """A CANNOT_TELL crossover in words: where it pays (if anywhere), the first cell it cannot tell, how many
    units would, and where it is slower."""
    where = f"at concurrency {cell.concurrency} ({_shown(cell)})"
    text = (f"cannot tell where it stops paying: pays up to concurrency {paid_up_to.concurrency}, cannot tell from "
            f"the base {where}" if paid_up_to else f"cannot tell from the base {where}")
    if slower:
        text += f"; slower at concurrency {', '.join(str(c.concurrency) for c in slower)}"
    return f"{text}; {cell.would_tell()}"


def crossover_of(cells: list[Cell]) -> Crossover:
    """One series' crossover (its cells by concurrency), by its intervals: it pays where the whole interval lies
    above 1.00x and is slower where it lies below; the crossing is placed between the last concurrency it pays at
    and the next, where it is slower. An interval that holds 1.00x there leaves it CANNOT_TELL."""
    usable = [c for c in cells if c.usable]
    largest = max((c.concurrency for c in cells), default=None)
    k = {"k": cells[0].k, "setting": cells[0].setting}
    if not usable:
        return Crossover(**k, pays=Pays.NO_DATA, concurrency=None, max_measured=largest)
    sides = [c.side for c in usable]
    if Side.PAYS not in sides:
        if all(side is Side.SLOWER for side in sides):
            return Crossover(**k, pays=Pays.NEVER, concurrency=float(usable[0].concurrency), max_measured=largest)
        first = next(c for c in usable if c.side is Side.UNCLEAR)
        return Crossover(**k, pays=Pays.CANNOT_TELL, concurrency=None, max_measured=largest,
                         unclear=_unclear(first, None, [c for c in usable if c.side is Side.SLOWER]))
    start = sides.index(Side.PAYS)
    end = start + len(list(takewhile(lambda side: side is Side.PAYS, sides[start:]))) - 1
    note = None if start == 0 else (f"not shown to pay at concurrency "
                                    f"{', '.join(str(c.concurrency) for c in usable[:start])}; pays from a higher one")
    if again := [c.concurrency for c in usable[end + 2:] if c.side is Side.PAYS]:
        note = f"pays again at concurrency {', '.join(map(str, again))} (noisy, or not monotone)"
    if end + 1 == len(usable):
        return Crossover(**k, pays=Pays.ALWAYS, concurrency=None, max_measured=usable[-1].concurrency, note=note)
    a, b = usable[end], usable[end + 1]
    if b.side is Side.SLOWER:
        return Crossover(**k, pays=Pays.CROSSES, concurrency=_crossing(a, b), max_measured=largest, note=note)
    slower = [c for c in usable[end + 1:] if c.side is Side.SLOWER]
    return Crossover(**k, pays=Pays.CANNOT_TELL, concurrency=None, max_measured=largest, note=note,
                     unclear=_unclear(b, a, slower))


def crossover(cells: list[Cell]) -> dict[str, Crossover]:
    """Per series (its label, e.g. K=4): where speculation stops paying as concurrency grows."""
    return {label: crossover_of(group) for label, group in by_series(cells).items()}


class Choice(BaseModel):
    """The series a sweep recommends at one concurrency, its draft length (None: serve without speculation) and
    `setting` (its other method overrides), and why. `undecided`: None because no series could be told from the
    base (`why` says how many units would tell), not because every one was shown slower."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    k: int | None
    why: str
    setting: tuple[str, ...] = ()
    undecided: bool = False


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
    work; of equal Ks, the first given). The base only where every interval lies below 1.0; where none lies above
    and some holds 1.0, undecided, with about how many units would tell."""
    usable = sorted((c for c in cells if c.usable), key=lambda c: c.k)
    if not usable:
        return Choice(k=None, why="no usable cell (failed, invalid or not measured)", undecided=True)
    other = "setting" if any(c.setting for c in usable) else "K"
    best = max(usable, key=lambda c: (c.speedup, -c.k))
    if all(c.side is Side.SLOWER for c in usable):
        return Choice(k=None, why=f"every {other} is slower than the base (best {_shown(best)})")
    if not any(c.side is Side.PAYS for c in usable):
        unclear = max((c for c in usable if c.side is Side.UNCLEAR), key=lambda c: (c.speedup, -c.k))
        return Choice(k=None, undecided=True,
                      why=f"cannot tell {_shown(unclear)} from the base (1.00x); {unclear.would_tell()}")
    tied = [c for c in usable if c is not best and _overlap(c, best)]
    pick = min((c for c in [best, *tied] if c.side is Side.PAYS), key=lambda c: c.k)
    if not tied:
        others = f", apart from every other {other}" if len(usable) > 1 else ""
        return _chosen(best, f"{_shown(best)}: beats the base{others}")
    group = [c for c in usable if c is best or any(c is t for t in tied)]  # by K, then as given
    names = [c.label for c in group]
    apart = " from ".join(names) if len(names) == 2 else f"{', '.join(names[:-1])} and {names[-1]} apart"
    partner = best if pick is not best else max(tied, key=lambda c: c.speedup)
    return _chosen(pick, f"cannot tell {apart} ({'; '.join(map(_shown, group))}): {pick.label}, the shortest of "
                         f"them that beats the base; {pick.would_tell(partner)}")


def choose_k(cells: list[Cell]) -> dict[int, Choice]:
    """Per concurrency: the draft length to serve there, by the rule of `choose`."""
    return {c: choose([cell for cell in cells if cell.concurrency == c])
            for c in sorted({cell.concurrency for cell in cells})}


def best_k(cells: list[Cell]) -> dict[int, int | None]:
    """Per concurrency: the draft length `choose_k` names, None where none is shown to beat the base."""
    return {c: choice.k for c, choice in choose_k(cells).items()}
