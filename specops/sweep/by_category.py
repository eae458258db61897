"""A sweep's choice per category: the same rule as the whole sweep's (analysis.choose: a setting is named only where
its interval clears 1.00x and the others'), applied to each category's own speedups, and where the categories'
choices differ, said so: which setting pays depends on what is asked."""
from __future__ import annotations

from specops.sweep.analysis import Cell, Choice, choose


def category_cells(cells: list[Cell]) -> dict[str, list[Cell]]:
    """Per category, the cells with that category's speedup and interval in place of the whole workload's."""
    names = list(dict.fromkeys(name for cell in cells for name in cell.categories))
    return {name: [cell.model_copy(update=dict(zip(("speedup", "speedup_low", "speedup_high"),
                                                   cell.categories[name])))
                   for cell in cells if name in cell.categories] for name in names}


def category_choices(cells: list[Cell]) -> dict[str, dict[int, Choice]]:
    """Per category, per concurrency: the series to serve for that kind of request (k None: none shown to pay)."""
    return {name: {c: choose([x for x in mine if x.concurrency == c]) for c in sorted({x.concurrency for x in mine})}
            for name, mine in category_cells(cells).items()}


def _named(choice: Choice, labels: dict[tuple, str]) -> str:
    return "no speculation" if choice.k is None else labels.get((choice.k, choice.setting), f"K={choice.k}")


def category_lines(cells: list[Cell]) -> list[str]:
    """The choice per category at each concurrency, and whether the best setting differs by category."""
    chosen = category_choices(cells)
    if not chosen:
        return []
    labels = {(c.k, c.setting): c.label for c in cells}
    lines = ["Per category (the same rule, on each category's own prompts):"]
    for c in sorted({x.concurrency for x in cells}):
        picks = {name: by_c[c] for name, by_c in chosen.items() if c in by_c}
        lines.append(f"  concurrency {c}: " + "; ".join(f"{name}: {_named(p, labels)} ({p.why})"
                                                        for name, p in picks.items()))
        named = {_named(p, labels) for p in picks.values() if p.k is not None}
        if len(named) > 1 or (named and any(p.k is None for p in picks.values())):
            lines.append(f"  -> at concurrency {c} the best setting differs by category: serve for the mix your "
                         "traffic has, or by category where requests can be routed")
    return lines
