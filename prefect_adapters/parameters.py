"""The flows' parameters as a deployment's form shows them: each an Annotated type that carries its
description, its choices and its bounds, one source for every flow that takes it.

Prefect builds a deployment's parameter schema from the flow's signature (prefect/utilities/callables
parameter_schema -> prefect/_internal/pydantic/v2_schema.py process_v2_params, Prefect 3.9). It wraps each
parameter in a Field(description=<its docstring Args entry, else None>) that replaces an Annotated
description, but merges json_schema_extra, which pydantic writes into the schema last: so each
description is written there too (`described`).

Each also carries its `Flag`: how `specops <flow>` takes it, and the flow's default. The CLI builds a flow's
subcommand from a flow's inputs (e.g. SWEEP_INPUTS, which tests/unit/cli/test_flow_commands.py holds
equal to the flow's signature), so the form and `--help` show the same names, bounds, help and defaults.

A profile is a choice of the shipped profiles: an `enum` in the schema only. The server checks a
deployment run's parameters against the schema (enforce_parameter_schema, true by default:
prefect/server/api/deployments.py create_flow_run_from_deployment answers 409), and a worker runs a
clone of the deployed commit, which holds the shipped profiles and no other file. A flow called in
Python validates the type alone, a str: `specops run path/to/x.yaml` still runs a profile file.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, get_args

from pydantic import BaseModel, Field, WithJsonSchema
from pydantic.fields import FieldInfo

from specops.fields import bounds
from specops.methods import METHODS, swept_methods
from specops.methods.specs import NgramMethod
from specops.profile.loader import list_profile_names
from specops.profile.schema import Benchmark
from specops.results.calibration import MAX_RUNS, MIN_RUNS
from specops.sweep.grid import C_KEY, K_KEY, MAX_KEY, MAX_REPLAYED, MIN_KEY

OVERRIDE_EXAMPLE = "benchmark.num_requests=8"


def described(text: str, json_schema_extra: dict[str, Any] | None = None, **constraints: Any) -> FieldInfo:
    """Field(description=text, ...) whose description survives Prefect's parameter schema (see above)."""
    return Field(description=text, json_schema_extra={"description": text, **(json_schema_extra or {})},
                 **constraints)


def upper_bound(model: type[BaseModel], field: str) -> int:
    """The field's `le` bound in the profile schema: the form offers what a profile accepts."""
    return bounds(model.model_fields[field])[1]


@dataclass(frozen=True)
class Flag:
    """A flow input on the command line: its flag (None: the positional argument), the flow's default, and the
    placeholder the help shows."""

    name: str | None
    default: Any = None
    metavar: str | None = None


def input_parts(annotated: Any) -> tuple[Any, Flag, FieldInfo]:
    """(the type under the annotations, its Flag, its described Field) of one flow input."""
    base, *marks = get_args(annotated)
    return (base, next(m for m in marks if isinstance(m, Flag)),
            next(m for m in marks if isinstance(m, FieldInfo) and m.description))


def default_of(annotated: Any) -> Any:
    """The flow's default for this input: what its signature and the CLI both take."""
    return input_parts(annotated)[1].default


SHIPPED = list_profile_names()
MAX_K = max(upper_bound(METHODS.get(name), K_KEY.rsplit(".", 1)[1]) for name in swept_methods())
MAX_CONCURRENCY = upper_bound(Benchmark, C_KEY.rsplit(".", 1)[1])
# n-gram lengths as the method spec bounds them (NgramMethod: the engines' own limits, cited there)
MAX_LOOKUP = min(upper_bound(NgramMethod, key.rsplit(".", 1)[1]) for key in (MIN_KEY, MAX_KEY))
_choice = {"enum": SHIPPED}

ProfileName = Annotated[str, described(
    "The profile to run: one of `profiles/<name>.yaml`. A deployment runs the shipped profiles (its worker "
    "runs a clone of the deployed commit); `specops run` also takes a path to a profile file.", _choice),
    Flag(None, "ngram-local", "PROFILE")]

ProfileNames = Annotated[list[Annotated[str, Field(json_schema_extra=_choice)]], described(
    "Two or more different profiles of one target model, run one after another (each against the base "
    "measured in its own run) and put in one table.", {"uniqueItems": True}, min_length=2)]

Overrides = Annotated[Sequence[str], described(
    f"Profile fields to change for this run, one `key=value` each: a dotted key of the profile and a YAML "
    f"value, e.g. {OVERRIDE_EXAMPLE} or benchmark.concurrency=4. Empty: the profile as shipped.",
    examples=[[OVERRIDE_EXAMPLE]]), Flag("--set", (), "KEY=VALUE")]

# A string in the form (a `str | None` would show a str/None switch), None or "" in Python: every flow
# names its directory `run_id or new_run_id()`.
RunId = Annotated[str | None, WithJsonSchema({"type": "string"}), described(
    "The name of the directory this run writes its files to (1-128 letters, digits, '.', '_' or '-'); "
    "empty: a timestamp. A name already used is refused."), Flag("--run-id", "", "NAME")]

DraftLengths = Annotated[Sequence[Annotated[int, Field(ge=1, le=MAX_K)]], described(
    f"Draft lengths K to measure ({K_KEY}), each once, 1 to {MAX_K}: one speculative server per K.",
    {"uniqueItems": True}, min_length=1), Flag("--k", (1, 2, 4), "K,K,...")]

Concurrencies = Annotated[Sequence[Annotated[int, Field(ge=1, le=MAX_CONCURRENCY)]], described(
    f"Concurrent requests to measure each K at ({C_KEY}), each once, 1 to {MAX_CONCURRENCY}; the table says "
    "where speculation stops paying.", {"uniqueItems": True}, min_length=1),
    Flag("--concurrency", (1, 2, 4), "C,C,...")]

NgramMins = Annotated[Sequence[Annotated[int, Field(ge=1, le=MAX_LOOKUP)]], described(
    f"n-gram profiles: shortest n-gram lengths to sweep ({MIN_KEY}), each once, 1 to {MAX_LOOKUP}; every one x "
    f"every draft length (x {MAX_KEY}'s values), min > max dropped. Empty: the profile's own.", {"uniqueItems": True}),
    Flag("--ngram-min", (), "N,N,...")]

NgramMaxes = Annotated[Sequence[Annotated[int, Field(ge=1, le=MAX_LOOKUP)]], described(
    f"n-gram profiles: longest n-gram lengths to sweep ({MAX_KEY}), each once, 1 to {MAX_LOOKUP}; crossed with "
    "the draft lengths and the shortest. Empty: the profile's own.", {"uniqueItems": True}),
    Flag("--ngram-max", (), "N,N,...")]

FromReplay = Annotated[int, described(
    f"0: sweep the draft lengths (and n-gram lengths) given. 1 to {MAX_REPLAYED}: sweep instead the N settings "
    "`specops replay` ranks best for the profile's method (n-gram or suffix, suffix with its cache off), best "
    "first; needs the vLLM venv.", ge=0, le=MAX_REPLAYED), Flag("--from-replay", 0, "N")]

Prune = Annotated[bool, described(
    "With from_replay: serve only the settings whose predicted speedup interval reaches the best one's (the replay "
    "weighs its steps by this host's measured step cost); the sweep says why each other is left out."),
    Flag("--prune", False)]

ServeSchedule = Annotated[bool, described(
    "Serve the recommended per-load draft-length schedule and measure it at every concurrency, where the "
    "backend's pinned version takes one; false skips that step."), Flag("--serve-schedule", True)]

CalibrationRuns = Annotated[int, described(
    f"How many A/A runs (the base against itself), {MIN_RUNS} to {MAX_RUNS}: about 19 of 20 intervals should "
    "contain 1.00x; 20 give a coverage worth reading.", ge=MIN_RUNS, le=MAX_RUNS), Flag("--runs", 20, "N")]
ABRuns = Annotated[int, described(
    f"How many runs of the profile itself after them (A/B), 0 or 2 to {MAX_RUNS}: about 9 of 10 intervals should "
    "contain the runs' median speedup; fewer says the speedup moves from run to run more than its interval says.",
    ge=0, le=MAX_RUNS), Flag("--ab", 0, "N")]


# The sweep flow's inputs, in its signature's order (flows/sweep.py takes its defaults from here).
SWEEP_INPUTS = {"profile": ProfileName, "draft_lengths": DraftLengths, "concurrencies": Concurrencies,
                "overrides": Overrides, "run_id": RunId, "serve_schedule": ServeSchedule, "ngram_min": NgramMins,
                "ngram_max": NgramMaxes, "from_replay": FromReplay, "prune": Prune}
CALIBRATE_INPUTS = {"profile": ProfileName, "runs": CalibrationRuns, "overrides": Overrides, "run_id": RunId,
                    "ab_runs": ABRuns}
