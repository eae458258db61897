"""The profile schema: one YAML per method x backend pair, validated before any work starts.

Defaults live here and only here; YAML files state what differs from them.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal, Union

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from specops.backends import BACKENDS
from specops.backends.spec import FieldError
from specops.bench.tool import BENCH_TOOLS, DEFAULT_TOOL
from specops.bench.workloads import check_prompt_source
from specops.draft.modes import MODE_OF_METHOD, check_mode_options
from specops.draft.spec import TrainSpec
from specops.fields import Count, Seconds
from specops.methods import METHODS
from specops.run.server_settings import Serving
from specops.sources.schemes import parse_source

if TYPE_CHECKING:
    from specops.bench.target import Api
    from specops.bench.tool import BenchTool


def _tagged_union(models: list[type[BaseModel]]):
    # Union over a runtime list: the X | Y spelling cannot take a variable number of members.
    return Annotated[Union[tuple(models)], Field(discriminator="kind")]  # type: ignore[valid-type]  # noqa: UP007


MethodSection = _tagged_union([METHODS.get(n) for n in METHODS.names()])
BackendSection = _tagged_union([BACKENDS.get(n).config_model for n in BACKENDS.names()])


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _parsed(value: str) -> str:
    parse_source(value)
    return value


# A model source, checked by its scheme's parser (target and draft alike).
Source = Annotated[str, AfterValidator(_parsed)]


class ModelSource(Section):
    source: Source = Field(description="embedded:smollm2-135m | hf://org/name[@revision] | local path")


class DraftSection(Section):
    """Where the draft comes from: a checkpoint to download, or trained from the target."""

    source: Source | None = Field(None, description="a draft checkpoint: hf://org/name[@revision] | local path")
    train: TrainSpec | None = Field(None, description="train the draft module from the target (ModelOpt)")

    @model_validator(mode="after")
    def _one_origin(self) -> DraftSection:
        if (self.source is None) == (self.train is None):
            raise ValueError("give exactly one of 'source' (a checkpoint) or 'train' (train it here)")
        return self


class Benchmark(Section):
    prompts: str = Field("humaneval", description="what is asked: humaneval, spec-bench or mt-bench (named workloads, "
                         "pinned), hf://datasets/org/name[@revision]/file.jsonl, or a .jsonl file of OpenAI chat "
                         "`messages`, ShareGPT `conversations`, EAGLE/Spec-Bench `turns` (with `category`) or plain "
                         "`text`/`prompt` lines")
    categories: list[str] = Field([], description="measure only these categories of the prompts (each line's "
                                  "`category`); empty: every line. Each category gets its speedup and interval")
    per_category: Count | None = Field(None, ge=1, le=10_000, description="sample this many prompts from each of "
                                       "`categories` (by `seed`): the measured requests are per_category x categories")
    seed: Count = Field(0, ge=0, description="the seed of the per-category sampling (recorded with the run)")
    mix: dict[str, Annotated[float, Field(gt=0)]] = Field({}, description="each category's share of the traffic, "
                                                          "weighing the overall speedup (normalized); empty: equal")
    api: Literal["auto", "chat", "completions"] = Field("auto", description="how requests are sent. chat: the chat "
                                                        "endpoint (the server applies the target's chat template); "
                                                        "completions: the text raw; auto: chat for conversations "
                                                        "where the backend serves it, completions for plain text")
    prompt_offset: Count = Field(0, ge=0, description="skip this many prompts of the source")
    num_requests: Count = Field(8, ge=1, le=100_000, description="measured requests per variant (with "
                                "per_category: per_category x categories, whatever is set here)")
    warmup_requests: Count = Field(1, ge=0, le=1000, description="requests sent before the measured ones, not "
                                   "measured")
    output_tokens: Count = Field(64, ge=1, le=32_768, description="fixed output length (ignore_eos)")
    concurrency: Count = Field(1, ge=1, le=1024, description="requests in flight at once")
    timeout_s: Seconds | None = Field(None, gt=0, description="bound on one benchmark tool run; default: derived "
                                      "from the work asked for (requests x tokens x the server's measured pace)")
    tool: str = Field(DEFAULT_TOOL, description=f"the load generator: {', '.join(BENCH_TOOLS.names())}")
    rounds: Count = Field(1, ge=1, le=100, description="measure each variant this many times, alternating "
                        "speculative and base; in round blocks (see pairing) the rounds are the interval's units, "
                        "so one round gives no interval")
    interleave: bool = Field(False, description="keep both variants' servers up and alternate them (see pairing); "
                             "false: one variant's rounds, then the other's (on a GPU both servers may not fit "
                             "at once)")
    pairing: Literal["auto", "requests", "rounds"] = Field(
        "auto", description="with interleave, how the variants alternate. requests: in one tool run per round, "
        "request by request, so each prompt is measured on both back to back (aiperf over Triton's generate "
        "endpoint, concurrency 1); rounds: whole tool runs, A B A B; auto: requests where the tool and servers "
        "allow it, else rounds. The report names the design and the interval's unit (prompts, or rounds)")

    @field_validator("tool")
    @classmethod
    def _tool(cls, value: str) -> str:
        if value not in BENCH_TOOLS:
            raise ValueError(f"unknown benchmark tool {value!r}; allowed: {', '.join(BENCH_TOOLS.names())}")
        return value

    @field_validator("prompts")
    @classmethod
    def _prompts(cls, value: str) -> str:
        check_prompt_source(value)
        return value

    @model_validator(mode="before")
    @classmethod
    def _sampled(cls, data):
        """per_category decides how many requests are measured: num_requests follows."""
        if not isinstance(data, dict) or data.get("per_category") is None:
            return data
        categories, n = data.get("categories") or [], data["per_category"]
        if not categories:
            raise FieldError("benchmark.per_category", "samples from each of benchmark.categories: name them")
        if data.get("prompt_offset"):
            raise FieldError("benchmark.prompt_offset", "a per-category sample is drawn from the whole file; "
                             "leave prompt_offset at 0 (or drop per_category)")
        if isinstance(n, int) and isinstance(categories, list):  # a profile's own num_requests gives way
            data = {**data, "num_requests": n * len(categories)}
        return data

    @model_validator(mode="after")
    def _categories(self) -> Benchmark:
        if len(set(self.categories)) != len(self.categories):
            raise FieldError("benchmark.categories", f"a category named twice: {self.categories}")
        unknown = sorted(set(self.mix) - set(self.categories)) if self.categories else []
        if unknown:
            raise FieldError("benchmark.mix", f"{unknown} not among benchmark.categories {self.categories}")
        return self


class Comparison(Section):
    baseline: bool = Field(True, description="also serve and benchmark the base model (speculation off)")
    lossless_prompts: Count = Field(4, ge=0, le=10_000, description="prompts of a separate lossless check, run where "
                                    "the benchmark tool kept no answer to some measured prompt (genai-perf keeps "
                                    "none); 0: no lossless check at all")
    lossless_max_tokens: Count = Field(48, ge=1, le=32_768, description="tokens generated per prompt of a separate "
                                       "lossless check")
    require_lossless: bool = Field(True, description="a mismatch marks the run INVALID")


class Profile(Section):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$", description="<method>-<backend>; the deployment name")
    description: str = Field("", description="one line: what is measured (lists, deployments, the UI)")
    method: MethodSection = Field(description="the speculative method and its settings, by `kind`")  # type: ignore[valid-type]
    backend: BackendSection = Field(description="the serving backend and its options, by `kind`")  # type: ignore[valid-type]
    target: ModelSource = Field(description="the model being sped up")
    draft: DraftSection | None = Field(None, description="where the draft comes from (methods that need one)")
    serving: Serving = Field(Serving(), description="how servers are run")
    benchmark: Benchmark = Field(Benchmark(), description="what is sent, how much, and how the variants take turns")
    comparison: Comparison = Field(Comparison(), description="the base variant and the lossless check")

    @model_validator(mode="after")
    def _compatible(self) -> Profile:
        spec = BACKENDS.get(self.backend.kind)
        method = self.method.kind
        if not spec.supports(method):
            serving = [b for b in BACKENDS.names() if BACKENDS.get(b).supports(method)]
            where = f"; backends that serve it: {', '.join(serving)}" if serving else ""
            raise FieldError(
                "method.kind",
                f"method {method!r} is not supported by backend {spec.name!r}; "
                f"allowed with {spec.name!r}: {', '.join(sorted(spec.methods))}{where}"
                + (f" ({spec.note})" if spec.note else "")
            )
        tool = BENCH_TOOLS.get(self.benchmark.tool)
        drives, serves = ", ".join(a.value for a in tool.apis), ", ".join(a.value for a in spec.apis)
        if tool().pick_api(spec.apis) is None:
            raise FieldError("benchmark.tool", f"{tool.name} drives {drives}; backend {spec.name!r} serves {serves}")
        if (asked := self.benchmark.api) != "auto" and tool().pick_api(spec.apis, chat=asked == "chat") is None:
            raise FieldError("benchmark.api", f"no {asked} API here: {tool.name} drives {drives}; backend "
                             f"{spec.name!r} serves {serves}; allowed: auto, " + ("completions" if asked == "chat"
                                                                                   else "chat"))
        if self.benchmark.pairing == "requests":
            self._check_request_pairing(tool, spec.apis)
        # The backend's support table, for both variants: what it renders on its pinned version.
        self.backend.resolve(self.method)
        self.backend.resolve(METHODS.get("none")())
        if self.method.needs_draft and self.draft is None:
            raise FieldError("draft", f"method {method!r} needs a 'draft' section with a source")
        if not self.method.needs_draft and self.draft is not None:
            raise FieldError("draft", f"method {method!r} uses no draft model; remove the 'draft' section")
        if self.draft is not None and self.draft.train is not None:
            self._resolve_training()
        return self

    def _check_request_pairing(self, tool: type[BenchTool], apis: tuple[Api, ...]) -> None:
        """What interleaved requests need that the profile alone decides (the servers' addresses come at run time)."""
        b = self.benchmark
        why = None
        if not (b.interleave and self.comparison.baseline):
            why = "needs benchmark.interleave true and comparison.baseline true (both variants up at once)"
        elif b.concurrency != 1:
            why = f"needs benchmark.concurrency 1 (got {b.concurrency}): two servers busy at once share the host"
        elif tool().pick_api(apis) not in tool.interleaves:
            able = [t.name for t in map(BENCH_TOOLS.get, BENCH_TOOLS.names()) if t().pick_api(apis) in t.interleaves]
            served = ", ".join(a.value for a in apis)
            why = (f"needs a tool that interleaves requests over this backend's API ({served}): "
                   f"{', '.join(able) or 'none does'}; benchmark.tool is {tool.name}")
        if why:
            raise FieldError("benchmark.pairing", f"requests {why}; allowed: auto, requests, rounds")

    def _resolve_training(self) -> None:
        train, method = self.draft.train, self.method.kind
        expected = MODE_OF_METHOD.get(method)
        if expected is None:
            raise FieldError("draft.train", f"method {method!r} has no trainable draft")
        if train.mode is not None and train.mode != expected:
            raise FieldError("draft.train.mode", f"method {method!r} serves a draft trained in mode "
                             f"{expected!r}, not {train.mode!r}")
        try:
            check_mode_options(expected, train.options, train.architecture)
        except ValueError as err:
            raise FieldError("draft.train", str(err)) from None
        if train.gpu is not None and expected == "distill":
            raise FieldError("draft.train.gpu", f"method {method!r} trains in mode 'distill', on the CPU only; "
                             "ModelOpt's GPU example trains eagle3, eagle and medusa")
        # A head trained here is a ModelOpt export: a backend that tells draft formats apart must expect one. (A
        # distilled draft is a plain checkpoint of the target's architecture.)
        if (expected != "distill" and "draft_format" in type(self.backend).model_fields
                and self.backend.draft_format != "modelopt"):
            raise FieldError("backend.draft_format", f"the draft is trained here with ModelOpt; set "
                             f"backend.draft_format: modelopt (now {self.backend.draft_format!r})")
        b = self.benchmark
        window = b.prompt_offset + b.num_requests + b.warmup_requests + self.comparison.lossless_prompts
        if "humaneval" in train.data.prompts and b.prompts == "humaneval" and window > train.data.humaneval_holdout:
            raise FieldError("draft.train.data.humaneval_holdout",
                             f"the benchmark and lossless check use HumanEval prompts 0..{window - 1} but only "
                             f"the first {train.data.humaneval_holdout} are held out of training; raise "
                             "humaneval_holdout or drop 'humaneval' from draft.train.data.prompts")
        # Frozen model: the resolved mode is written back once, here, at validation.
        resolved = self.draft.model_copy(update={"train": train.model_copy(update={"mode": expected})})
        object.__setattr__(self, "draft", resolved)
