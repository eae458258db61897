"""Reading AIPerf 0.13.0's exports (schema_version 1.4) under its --artifact-dir.

`profile_export_aiperf.json` holds the aggregates (each metric {unit, avg, p50, p99, ...}) and
the run's completeness; `profile_export.jsonl` one record per request (metadata with its phase
and conversation id, metrics with their units, error); `inputs.json` the payload each
conversation sent, which names the prompt: the body itself, as the endpoint formatted it
(aiperf/dataset/payload_formatting.py, format_conversation_payloads) — a template body's
`text_input`, or an OpenAI body's `prompt` or `messages`.

A record of a request whose server reported speculative decoding (vLLM's per-request metrics,
`metrics.speculative_decoding` in the final chunk) also carries `spec_decode_acceptance`: AIPerf's
engine-neutral copy of it (aiperf/common/models/spec_decode_models.py SpecDecodeAcceptanceRecord:
num_spec_steps, num_accepted_draft_tokens, num_draft_tokens, the histogram, ...), absent otherwise. It
sits in the same line as the request's latency, so nothing needs joining.
"""
from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from specops.bench.tool import DISTRIBUTIONS, ExportError, aggregate_metrics, payload_prompt
from specops.results.metrics import BenchMetrics, RequestSample

log = logging.getLogger(__name__)

AGGREGATES = "profile_export_aiperf.json"
RECORDS = "profile_export.jsonl"
RAW_RECORDS = "profile_export_raw.jsonl"  # --export-level raw: every request's answers, as received
INPUTS = "inputs.json"
PROFILING = "profiling"  # metadata.benchmark_phase of measured requests (warm-up ones say "warmup")
SPEC_DECODE = "spec_decode_acceptance"  # a record's speculative-decoding counts (AIPerf's copy of the server's)
# RequestSample field <- SpecDecodeAcceptanceRecord field (vLLM's own names: vllm/v1/metrics/stats.py,
# RequestSpecDecodeMetrics.to_dict)
SPEC_COUNTS = {"spec_steps": "num_spec_steps", "accepted_tokens": "num_accepted_draft_tokens",
               "draft_tokens": "num_draft_tokens"}


def _load_json(path: Path) -> Any:
    if not path.is_file():
        raise ExportError(f"AIPerf wrote no {path.name} in {path.parent} (did it finish? check its log)")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ExportError(f"{path}: not valid JSON ({exc})") from None


def parse_metrics(artifact_dir: Path) -> BenchMetrics:
    """The run's aggregates; a cancelled or incomplete run, or one with failed requests, is an error."""
    path = Path(artifact_dir) / AGGREGATES
    data = _load_json(path)
    if data.get("was_cancelled") or not data.get("is_complete", False):
        raise ExportError(f"{path}: the run did not complete (was_cancelled={data.get('was_cancelled')}, "
                          f"is_complete={data.get('is_complete')})")
    if data.get("error_summary"):
        raise ExportError(f"{path}: requests failed: {json.dumps(data['error_summary'])[:800]}")
    return BenchMetrics(**aggregate_metrics(data, path, "requests"))


def conversation_prompts(artifact_dir: Path) -> dict[str, str]:
    """Conversation id -> the prompt text its (single-turn) payload carried."""
    path = Path(artifact_dir) / INPUTS
    prompts = {}
    for session in _load_json(path).get("data", []):
        body = (session.get("payloads") or [{}])[0]
        # OpenAI bodies sit at the top level here, where genai-perf nests them under "payload".
        text = payload_prompt(body if "text_input" in body else {"payload": body})
        if text is None:
            raise ExportError(f"{path}: session {session.get('session_id')!r} carries no prompt")
        prompts[session["session_id"]] = text
    return prompts


def profiling_records(artifact_dir: Path) -> list[dict[str, Any]]:
    """The records of the measured requests (not warm-up), each with its prompt's text as `prompt_text`; a
    failed or cancelled one is an error."""
    path = Path(artifact_dir) / RECORDS
    if not path.is_file():
        raise ExportError(f"AIPerf wrote no {RECORDS} in {artifact_dir} (run it with --export-level records)")
    texts = conversation_prompts(artifact_dir)
    records = []
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        meta = record["metadata"]
        if meta.get("benchmark_phase") != PROFILING:
            continue
        if record.get("error") or meta.get("was_cancelled"):
            raise ExportError(f"{path}: request {meta.get('x_request_id')} failed: {record.get('error')}")
        record["prompt_text"] = texts.get(meta["conversation_id"])
        records.append(record)
    return records


def record_sample(record: dict[str, Any], prompt_of: Callable[[str], int | None], round_: int,
                  artifact_dir: Path) -> RequestSample:
    """One measured request as a sample naming its prompt (index), with the speculative-decoding counts its
    server reported for it (None where it reported none)."""
    meta, where = record["metadata"], Path(artifact_dir) / RECORDS
    text = record.get("prompt_text")
    prompt = prompt_of(text) if text is not None else None
    if prompt is None:
        raise ExportError(f"{where}: conversation {meta['conversation_id']!r} sent no prompt the job asked for")
    metrics = record["metrics"]
    ttft = metrics.get("time_to_first_token")
    return RequestSample(prompt=prompt, round=round_, latency_s=_ms(metrics["request_latency"]) / 1000,
                         output_tokens=int(metrics["output_sequence_length"]["value"]),
                         ttft_s=_ms(ttft) / 1000 if ttft else None,
                         **spec_decode_counts(record, f"{where}: request {meta.get('x_request_id')}"))


def request_samples(artifact_dir: Path, prompt_of: Callable[[str], int | None], round_: int) -> list[RequestSample]:
    """One sample per measured request (record_sample)."""
    return [record_sample(r, prompt_of, round_, artifact_dir) for r in profiling_records(artifact_dir)]


def records_metrics(records: list[dict[str, Any]]) -> BenchMetrics:
    """The aggregates of some of a run's requests (one variant's, in an interleaved run), from their records.

    AIPerf's own aggregates cover the whole run, so they are recomputed here: averages and percentiles
    (numpy's linear interpolation) of the per-request values; the throughputs over the requests' own time,
    tokens (or requests) / summed request latency. At concurrency 1, the only load that interleaves, that is
    the rate one stream of requests sees, without the idle gaps between requests.
    """
    if not records:
        raise ExportError("no measured requests to aggregate")

    def values(key: str) -> list[float] | None:
        found = [r["metrics"].get(key) for r in records]
        if any(v is None for v in found):
            return None
        return [float(v["value"]) for v in found]

    latency = [_ms(r["metrics"]["request_latency"]) for r in records]
    tokens = values("output_sequence_length") or []
    seconds = sum(latency) / 1000
    figures: dict[str, Any] = {
        "output_token_throughput_tok_s": sum(tokens) / seconds,
        "request_throughput_req_s": len(records) / seconds,
        "output_sequence_length_avg": float(np.mean(tokens)),
        "input_sequence_length_avg": float(np.mean(isl)) if (isl := values("input_sequence_length")) else None,
        "request_count": len(records),
    }
    for key, (_unit, stem, _streaming_only) in DISTRIBUTIONS.items():
        found = latency if key == "request_latency" else values(key)
        for name, q in (("avg", None), ("p50", 50), ("p99", 99)):
            figures[f"{stem}_{name}"] = None if found is None else float(
                np.mean(found) if q is None else np.percentile(found, q))
    return BenchMetrics(**figures)


def answering_models(artifact_dir: Path, field: str = "model_name") -> dict[str, str]:
    """x_request_id -> the model that answered it, from the raw export (--export-level raw): `field` of the first
    response of each request, whole (`text`: the body) or streamed (its first SSE packet's `data`, one JSON
    chunk). Triton's generate names the model in `model_name`; an OpenAI server in `model`, in every chunk
    (vLLM: its first --served-model-name). The request's own body names a model too (`payload.model`, the same
    for every server of a run): only the answer says which server gave it."""
    path = Path(artifact_dir) / RAW_RECORDS
    if not path.is_file():
        raise ExportError(f"AIPerf wrote no {RAW_RECORDS} in {artifact_dir} (run it with --export-level raw)")
    answered = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        request_id = record["metadata"].get("x_request_id")
        first = (record.get("responses") or [None])[0]
        body = _first_body(first)
        if request_id is None or body is None or not isinstance(body.get(field), str):
            raise ExportError(f"{path}: request {request_id} has no answer naming its model in {field!r}: "
                              f"{str(first)[:300]}")
        answered[request_id] = body[field]
    return answered


def answer_texts(artifact_dir: Path) -> dict[str, str]:
    """x_request_id -> the text the server answered, from the raw export: an OpenAI answer's chunks joined (chat:
    choices[].delta.content, or a whole body's message.content; completions: choices[].text), Triton's generate
    its `text_output`s. Requests whose answer holds no such text are left out."""
    path = Path(artifact_dir) / RAW_RECORDS
    texts = {}
    for line in path.read_text(encoding="utf-8").splitlines() if path.is_file() else []:
        record = json.loads(line)
        parts = [_text_of(_first_body(response)) for response in record.get("responses") or []]
        if (request_id := record["metadata"].get("x_request_id")) and any(p is not None for p in parts):
            texts[request_id] = "".join(p for p in parts if p)
    return texts


def answers_of(records: list[dict[str, Any]], texts: dict[str, str],
               prompt_of: Callable[[str], int | None]) -> dict[int, str]:
    """Measured records' answers by their prompt's index (records whose answer has no text are left out)."""
    out = {}
    for record in records:
        index, request_id = prompt_of(record.get("prompt_text") or ""), record["metadata"].get("x_request_id")
        if index is not None and request_id in texts:
            out[index] = texts[request_id]
    return out


def _text_of(body: dict[str, Any] | None) -> str | None:
    if body is None:
        return None
    if isinstance(body.get("text_output"), str):
        return body["text_output"]
    texts = [c.get("text") if "text" in c else (c.get("delta") or c.get("message") or {}).get("content")
             for c in body.get("choices") or [] if isinstance(c, dict)]
    found = [t for t in texts if isinstance(t, str)]
    return "".join(found) if found else None


def _first_body(response: dict[str, Any] | None) -> dict[str, Any] | None:
    if not response:
        return None
    packets = response.get("packets")  # an SSE message's fields; its JSON is the `data` one
    text = next((p.get("value") for p in packets if p.get("name") == "data"), None) if packets \
        else response.get("text")
    try:
        body = json.loads(text) if isinstance(text, str) else None
    except json.JSONDecodeError:
        return None
    return body if isinstance(body, dict) else None


def spec_decode_counts(record: dict[str, Any], where: str = "AIPerf record") -> dict[str, int]:
    """The RequestSample counts (SPEC_COUNTS) of one record; {} when it carries none (a base variant, a server
    without per-request metrics) or carries them malformed (logged: they are optional, the latency is not)."""
    spec = record.get(SPEC_DECODE)
    if spec is None:
        return {}
    counts = {field: spec.get(key) if isinstance(spec, dict) else None for field, key in SPEC_COUNTS.items()}
    if not all(type(v) is int and v >= 0 for v in counts.values()):
        log.warning("%s: %s lacks the counts %s: %s", where, SPEC_DECODE, sorted(SPEC_COUNTS.values()),
                    json.dumps(spec)[:300])
        return {}
    return counts


def request_errors(artifact_dir: Path) -> list[str]:
    """The distinct errors of the requests that failed ("HTTP 404 Not Found: ..." with a count)."""
    path = Path(artifact_dir) / RECORDS
    if not path.is_file():
        return []
    errors = [json.loads(line).get("error") for line in path.read_text(encoding="utf-8").splitlines()]
    counts = Counter(f"HTTP {e.get('code')} {e.get('type')}: {e.get('message')}" for e in errors if e)
    return [f"{n}x {text}" for text, n in counts.items()]


def _ms(metric: dict[str, Any]) -> float:
    if metric.get("unit") != "ms":
        raise ExportError(f"expected a value in ms, got {metric}")
    return float(metric["value"])
