"""The `draft.train` section of a profile: how a draft module is made from the target.

Training is the ModelOpt seed's workflow made declarative: synthesize data by sending prompts
to the served base model, train speculation modules with the base frozen, export. Everything
is validated at profile load, before any download, serving or training starts.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from specops.atomic_file import write_text
from specops.draft.gpu import GpuTraining, VllmSynthesisServer
from specops.fields import Count, Real
from specops.sources.hub_datasets import FORM, is_dataset_uri, parse_dataset_uri


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DataSpec(_Section):
    """Training data: prompts answered by the served base model, written as JSONL."""

    prompts: list[Literal["humaneval", "stdlib"]] = Field(
        default_factory=lambda: ["stdlib", "humaneval"],
        description="offline prompt sources: HumanEval problems; code-completion prompts made "
        "from signatures and docstrings of Python standard-library functions",
    )
    conversations: str | None = Field(
        None, description="a conversation JSONL (ModelOpt's Daring-Anteater format, or "
        f"OpenAI-style messages) whose user turns are also sent to the base model: a path, or {FORM}")
    num_samples: Count = Field(160, ge=1, le=1_000_000, description="prompts answered by the base model")
    max_tokens: Count = Field(96, ge=1, le=8192, description="longest answer asked of the base model")
    concurrency: Count = Field(2, ge=1, le=256, description="requests in flight while synthesizing")
    endpoint: str | None = Field(
        None, description="an OpenAI-compatible server (http://host:port; /v1/chat/completions is "
        "used) instead of serving the target on the embedded Triton server")
    endpoint_model: str | None = Field(None, description="model name sent to `endpoint`")
    server: VllmSynthesisServer | None = Field(
        None, description="serve the target in this container (the seed's `vllm serve`) and send the prompts to "
        "it, instead of serving it on this profile's backend")
    humaneval_holdout: Count = Field(
        64, ge=0, le=164, description="the first N HumanEval problems are never trained on: the "
        "benchmark and the lossless check draw their prompts from them")
    seed: Count = Field(0, description="seed of the prompts' sampling (the stdlib prompts drawn)")

    @field_validator("prompts")
    @classmethod
    def _some_prompts(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError(f"prompt sources repeat: {value}")
        return value

    @field_validator("endpoint")
    @classmethod
    def _http(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError(f"endpoint must start with http:// or https://, got {value!r}")
        return value

    @field_validator("conversations")
    @classmethod
    def _dataset(cls, value: str | None) -> str | None:
        if value is not None and is_dataset_uri(value):
            parse_dataset_uri(value)
        return value

    @model_validator(mode="after")
    def _has_a_source(self) -> DataSpec:
        if not self.prompts and not self.conversations:
            raise ValueError("no prompt source: name prompts (humaneval, stdlib) or a conversations file")
        if self.endpoint and self.server:
            raise ValueError("give one of 'endpoint' (a running server) or 'server' (one specops starts), not both")
        return self


class TrainSpec(_Section):
    """How to train the draft module. Mode and options are ModelOpt's own names."""

    # Modes of modelopt.torch.speculative (eagle3 and eagle are its `eagle` mode with and
    # without auxiliary hidden states), plus `distill` for a draft model derived from the target.
    MODES: ClassVar[tuple[str, ...]] = ("eagle3", "eagle", "medusa", "distill")

    mode: str | None = Field(
        None, description="eagle3 | eagle | medusa | distill (a draft model derived from the "
        "target); defaults to the one the method serves")
    data: DataSpec = Field(DataSpec(), description="the training data: what is synthesized, and how")
    options: dict[str, Any] = Field(
        default_factory=dict,
        description="ModelOpt config fields of the mode (e.g. eagle_ttt_steps, medusa_num_layers)")
    architecture: dict[str, Any] = Field(
        default_factory=dict,
        description="eagle_architecture_config overrides (sized for the target by default)")
    draft_layers: Count = Field(4, ge=1, le=128, description="distill: target layers kept in the draft")
    draft_vocab_size: Count | None = Field(
        None, ge=256, description="eagle modes: most frequent tokens the head predicts (d2t); "
        "None keeps the full vocabulary")
    loss_vocab_size: Count | None = Field(
        8192, ge=256, description="medusa, distill: the loss covers the N most frequent tokens "
        "of the data (the output layer keeps the target's full vocabulary); None: all tokens")
    epochs: Real = Field(2.0, gt=0, le=100, description="passes over the data")
    max_steps: Count | None = Field(None, ge=1, description="stop after this many optimizer steps")
    batch_size: Count = Field(4, ge=1, le=512, description="sequences per optimizer step")
    seq_len: Count = Field(256, ge=16, le=32768, description="training sequences are cut to this length")
    lr: Real = Field(1e-3, gt=0, le=1, description="learning rate")
    threads: Count = Field(2, ge=1, le=256, description="torch threads while training")
    seed: Count = Field(0, description="seed of the shuffling and initialization")
    gpu: GpuTraining | None = Field(
        None, description="train in ModelOpt's example container on GPUs (bf16, torch.compile, data parallel) "
        "instead of in-process on the CPU")

    # Settings of the in-process CPU trainer that ModelOpt's GPU recipe has no counterpart for.
    CPU_ONLY: ClassVar[dict[str, str]] = {
        "threads": "the GPU trainer runs one process per GPU",
        "draft_vocab_size": "ModelOpt's GPU recipe takes a calibrated draft vocabulary file (data.draft_vocab_cache), "
                            "which specops does not make",
        "loss_vocab_size": "ModelOpt's Medusa loss covers the whole vocabulary",
        "draft_layers": "only the distill mode uses it, and it trains on the CPU",
    }

    @field_validator("mode")
    @classmethod
    def _known_mode(cls, value: str | None) -> str | None:
        if value is not None and value not in cls.MODES:
            raise ValueError(f"unknown ModelOpt mode {value!r}; allowed: {', '.join(cls.MODES)}")
        return value

    @model_validator(mode="after")
    def _known_options(self) -> TrainSpec:
        from specops.draft.modes import check_mode_options

        if self.mode is not None:
            check_mode_options(self.mode, self.options, self.architecture)
        if self.gpu is not None:
            self._gpu_settings()
        return self

    def _gpu_settings(self) -> None:
        if self.mode == "distill":
            raise ValueError("gpu: mode 'distill' trains on the CPU only; ModelOpt's GPU example trains "
                             "eagle3, eagle and medusa")
        cpu_only = sorted(set(self.CPU_ONLY) & self.model_fields_set)
        if cpu_only:
            raise ValueError(f"{cpu_only[0]}: a CPU-trainer setting; with 'gpu' remove it "
                             f"({self.CPU_ONLY[cpu_only[0]]})")


# What a training run reports: sizes, time, loss, accuracy, and where the export went.
RESULT_FILE = "train_result.json"  # next to the export, in the cache entry and the run directory


@dataclass
class TrainResult:
    mode: str
    export_dir: Path
    sequences: int
    tokens: int
    steps: int
    train_seconds: float
    prepare_seconds: float
    final_loss: float
    train_accuracy: dict[str, float] = field(default_factory=dict)
    acceptance: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict:
        data = asdict(self)
        data["export_dir"] = str(self.export_dir)
        return data

    def write(self, path: Path) -> None:
        write_text(path, json.dumps(self.to_json(), indent=2, sort_keys=True))

    @classmethod
    def read(cls, path: Path) -> TrainResult:
        data = json.loads(Path(path).read_text())
        data["export_dir"] = Path(data["export_dir"])
        return cls(**data)
