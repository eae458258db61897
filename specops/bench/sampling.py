"""Which prompts a run sends, and of what kind: the benchmark section applied to its prompt file.

Without `per_category`, the measured prompts are the file's (of `categories`, where named) from `prompt_offset`
on, warm-up first, as they come; the lossless check takes the ones after them. With `per_category`, N prompts are
drawn from each named category by `seed` and sent round robin over the categories (so the host's slow spells fall
on every category alike); warm-up and check prompts come from the ones not drawn. Every list keeps each prompt's
category beside it: a request is credited to its prompt's category by the prompt's place in the list.
"""
from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import chain, zip_longest
from pathlib import Path

from specops.bench.prompts import PromptRecord, read_records
from specops.bench.target import RequestKind
from specops.bench.workloads import named, prompt_file, provenance


class WorkloadError(ValueError):
    """A benchmark section that asks for prompts its file cannot give: names the field and the file."""

    def __init__(self, field: str, reason: str):
        super().__init__(f"{field}: {reason}")
        self.field, self.reason = field, reason


@dataclass(frozen=True)
class Workload:
    """The run's prompts: warm-up first, then the measured ones (the list every tool is given), with categories."""

    source: str  # benchmark.prompts as given
    label: str  # what they are, with provenance (a named workload's pin, or the file's sha256)
    prompts: list[str]
    categories: list[str | None]  # each prompt's category, aligned with `prompts`
    warmup: int
    requests: int  # measured requests: the tool sends the list in order, warm-up first, and wraps around at its end
    check: list[str]  # the lossless check's prompts
    conversations: bool  # the file holds conversations (chat requests), not plain text
    seed: int | None = None  # the per-category sampling's seed; None: no sampling
    # How every sender (the benchmark tool, the lossless check, the replay) sends them: decided with the backend
    # and the tool (profile.workload.workload_for); None until then
    request: RequestKind | None = None

    @property
    def chat(self) -> bool:
        if self.request is None:
            raise ValueError("the workload's request kind is not decided yet (profile.workload.workload_for)")
        return self.request.chat

    def _measured(self, items: list):
        return [items[(self.warmup + i) % len(items)] for i in range(self.requests)]

    @property
    def measured(self) -> list[str]:
        """The measured requests' prompts, in the order sent."""
        return self._measured(self.prompts)

    @property
    def measured_categories(self) -> list[str | None]:
        return self._measured(self.categories)

    def named_categories(self) -> list[str]:
        """The measured categories in the order first measured ([] where the prompts have none)."""
        return list(dict.fromkeys(c for c in self.measured_categories if c is not None))


def file_categories(records: Sequence[PromptRecord]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for r in records:
        if r.category is not None:
            counts[r.category] = counts.get(r.category, 0) + 1
    return counts


def check_categories(bench, available: dict[str, int], where: str) -> None:
    """The categories asked for against those the file has (`available`: name -> prompts); WorkloadError names the
    field, the file and what it holds."""
    if unknown := sorted(set(bench.mix) - set(available)):
        raise WorkloadError("benchmark.mix", f"{unknown} not among the categories of {where}: "
                            f"{', '.join(available) or 'it has none'}")
    if not bench.categories:
        return
    if not available:
        raise WorkloadError("benchmark.categories", f"{where} has no `category` on its lines; drop "
                            "benchmark.categories or give a file whose lines name their category")
    held = ", ".join(f"{c} ({n})" for c, n in available.items())
    if missing := [c for c in bench.categories if c not in available]:
        raise WorkloadError("benchmark.categories", f"{missing} not in {where}; its categories: {held}")
    if bench.per_category and (short := [c for c in bench.categories if available[c] < bench.per_category]):
        raise WorkloadError("benchmark.per_category", f"{bench.per_category} prompts from each category, but "
                            f"{where} has fewer in {short}: {held}")


def select(records: Sequence[PromptRecord], bench, lossless_prompts: int, where: str) -> tuple[list[PromptRecord],
                                                                                              int, list[str]]:
    """(warm-up + measured records, warm-up count, check prompts) of the file's records."""
    check_categories(bench, file_categories(records), where)
    pool = [r for r in records if not bench.categories or r.category in bench.categories]
    if bench.per_category:
        return _sampled(pool, bench, lossless_prompts)
    window = pool[bench.prompt_offset:bench.prompt_offset + bench.warmup_requests + bench.num_requests]
    if not window:
        raise WorkloadError("benchmark.prompts", f"no prompts selected from {where} ({len(pool)} "
                            f"{'of those categories' if bench.categories else 'in all'}, prompt_offset "
                            f"{bench.prompt_offset}, {bench.warmup_requests} warm-up)")
    measured = [window[(bench.warmup_requests + i) % len(window)].category for i in range(bench.num_requests)]
    if empty := [c for c in bench.categories if c not in measured]:
        raise WorkloadError("benchmark.categories", f"{empty} get no measured prompt from {where} (prompts "
                            f"{bench.prompt_offset}..{bench.prompt_offset + len(window) - 1} of those categories, in "
                            "file order); set benchmark.per_category to sample each")
    after = bench.prompt_offset + len(window)
    check = pool[after:after + lossless_prompts] if after + lossless_prompts <= len(pool) else pool[:lossless_prompts]
    return window, bench.warmup_requests, [r.text for r in check]


def _sampled(pool: list[PromptRecord], bench, lossless_prompts: int) -> tuple[list[PromptRecord], int, list[str]]:
    rng = random.Random(bench.seed)
    drawn, rest = [], []
    for category in bench.categories:
        members = [r for r in pool if r.category == category]
        chosen = set(rng.sample(range(len(members)), bench.per_category))
        drawn.append([m for i, m in enumerate(members) if i in chosen])
        rest.append([m for i, m in enumerate(members) if i not in chosen])
    spare, measured = _round_robin(rest), _round_robin(drawn)
    # Warm-up from prompts not drawn; where the categories were drawn whole, from the measured ones (a cache the
    # warm-up fills is then flagged primed: pipeline.check.cache_primed)
    warm = (spare + measured)[:bench.warmup_requests]
    check = spare[len(warm):len(warm) + lossless_prompts] or measured[:lossless_prompts]
    return warm + measured, len(warm), [r.text for r in check]


def _round_robin(lists: list[list[PromptRecord]]) -> list[PromptRecord]:
    return [r for r in chain.from_iterable(zip_longest(*lists)) if r is not None]


def workload_of(bench, lossless_prompts: int, cache_dir: Path, log: Callable[[str], None] = print) -> Workload:
    """The run's workload: its prompt file read (a named one fetched and verified) and the section applied."""
    path = prompt_file(bench.prompts, cache_dir, log)
    records = read_records(path)
    if not records:
        raise WorkloadError("benchmark.prompts", f"{path} holds no prompts")
    chosen, warmup, check = select(records, bench, lossless_prompts, str(path))
    return Workload(source=bench.prompts, label=provenance(bench.prompts, path), prompts=[r.text for r in chosen],
                    categories=[r.category for r in chosen], warmup=warmup, requests=bench.num_requests, check=check,
                    conversations=records[0].chat,
                    seed=bench.seed if bench.per_category else None)


def planned(bench) -> Workload:
    """The workload as a plan shows it, without fetching anything: placeholders for the prompts, the kind read from
    the file where it is on disk (a named workload is questions; a dataset's file is read at the download step)."""
    prompts = [f"<{bench.prompts} prompt {i}>" for i in range(bench.warmup_requests + bench.num_requests)]
    conversations = named(bench.prompts) is not None
    path = Path(bench.prompts)
    if not conversations and path.suffix in (".jsonl", ".gz") and path.is_file():
        records = read_records(path)
        conversations = bool(records) and records[0].chat
    return Workload(source=bench.prompts, label=bench.prompts, prompts=prompts, categories=[None] * len(prompts),
                    warmup=bench.warmup_requests, requests=bench.num_requests, check=[],
                    conversations=conversations)


def known_categories(source: str) -> dict[str, int] | None:
    """A named workload's categories without fetching it (None: the file must be read to know)."""
    workload = named(source)
    return dict(workload.categories) if workload is not None else None
