"""TensorRT-LLM LLM-API facts per release (data/trtllm.yaml `versions`, distilled from its `research`):
decoding types and their fields, the draft-model key, LLM-API args, trtllm-serve flags, and the
Triton llmapi model's inputs. Shared by the `trtllm` (Triton llmapi model) and `trtllm-serve`
backends: both hand the same LLM-API args to TensorRT-LLM.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from specops.versions.store import by_version, load

DATA = "trtllm"


@dataclass(frozen=True)
class LlmapiModel:
    """The Triton llmapi model (config.pbtxt + model.py) a tritonserver image copies in."""

    inputs_declared: frozenset[str]
    inputs_read: frozenset[str]
    perf_outputs: frozenset[str]
    pins_output_length: bool
    perf_zero_on_pytorch: str | None  # why its speculative perf fields read zero, when they do
    yaml_keys_popped: frozenset[str]  # model.yaml keys model.py takes before LLM(**args)
    launch_flags: frozenset[str]  # scripts/launch_triton_server.py


@dataclass(frozen=True)
class TrtllmRelease:
    version: str
    decoding_types: frozenset[str]
    eagle_is_eagle3: bool  # decoding_type Eagle serves EAGLE-3 heads on the PyTorch backend
    decoding_fields: dict[str, frozenset[str]]  # decoding type -> its fields, the base fields included
    model_keys: tuple[str, ...]  # how a speculative_config names the draft; the first is canonical
    hub_draft: bool  # the draft key takes hub ids (TensorRT-LLM downloads them)
    llm_args: frozenset[str]
    llm_args_absent: frozenset[str]
    llm_args_complete: bool
    serve_flags: frozenset[str]
    llmapi: LlmapiModel | None
    research: str

    def fields_of(self, decoding_type: str) -> frozenset[str]:
        return self.decoding_fields.get(decoding_type, self.decoding_fields["base"])


def _llm_args(doc: dict, row: dict) -> frozenset[str]:
    snapshot = doc["snapshots"][row["llm_args_snapshot"]]["llm_args_complete"]
    names = {n.split(" ")[0] for n in snapshot["base"] + snapshot["torch"] if not n.startswith("_")}
    return frozenset((names | set(row.get("llm_args_extra", []))) - set(row.get("llm_args_absent", [])))


def _llmapi(doc: dict, name: str | None) -> LlmapiModel | None:
    if name is None:
        return None
    m = doc["llmapi_models"][name]
    return LlmapiModel(frozenset(m["inputs_declared"]), frozenset(m["inputs_read"]), frozenset(m["perf_outputs"]),
                       bool(m["pins_output_length"]), m.get("perf_zero_on_pytorch"),
                       frozenset(m["yaml_keys_popped"]), frozenset(m["launch_flags"]))


@cache
def trtllm_releases() -> dict[str, TrtllmRelease]:
    doc = load(DATA)
    out = {}
    for version in by_version(doc["versions"]):
        row = doc["versions"][version]
        base = frozenset(row["decoding_fields"]["base"])
        fields = {t: base | frozenset(f) for t, f in row["decoding_fields"].items() if t != "base"}
        out[version] = TrtllmRelease(
            version=version,
            decoding_types=frozenset(row["decoding_types"]),
            eagle_is_eagle3=bool(row["eagle_is_eagle3"]),
            decoding_fields={"base": base, **fields},
            model_keys=tuple(row["model_keys"]),
            hub_draft=bool(row["hub_draft"]),
            llm_args=_llm_args(doc, row),
            llm_args_absent=frozenset(row.get("llm_args_absent", [])),
            llm_args_complete=bool(row["llm_args_complete"]),
            serve_flags=frozenset(row["serve_flags"]),
            llmapi=_llmapi(doc, row.get("llmapi_model")),
            research=row["research"],
        )
    return out


def trtllm_release(version: str) -> TrtllmRelease | None:
    return trtllm_releases().get(version)


def nested_fields() -> dict[str, frozenset[str]]:
    return {k: frozenset(v) for k, v in load(DATA)["nested_fields"].items()}


def completions_fields() -> frozenset[str]:
    return frozenset(load(DATA)["completions_fields"])


def first_with(predicate) -> TrtllmRelease | None:
    return next((r for r in trtllm_releases().values() if predicate(r)), None)
