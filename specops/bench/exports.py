"""Reading genai-perf 0.0.16 exports.

genai-perf writes under `--artifact-dir` into a subdirectory it names itself,
`<model>-<service kind>-<backend>-concurrency<N>` (e.g. `eagle-triton-vllm-concurrency1`):
`profile_export_genai_perf.json` (metrics + the input config), a `.csv` twin, perf_analyzer's
raw `profile_export.json` and the `inputs.json` it sent. The JSON is read here: its numbers
are plain floats, while the CSV formats them with thousands separators ("1,541.00").
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

EXPORT_NAME = "profile_export_genai_perf.json"

# export key -> (unit genai-perf and AIPerf report, our name's stem, streaming only: absent from a
# non-streaming run's export); of each we keep DISTRIBUTION_STATS
DISTRIBUTIONS = {
    "request_latency": ("ms", "request_latency_ms", False),
    "time_to_first_token": ("ms", "time_to_first_token_ms", True),
    "inter_token_latency": ("ms", "inter_token_latency_ms", True),
}
DISTRIBUTION_STATS = ("avg", "p50", "p99")


class ExportError(ValueError):
    """An export that is missing, ambiguous or not in the expected shape."""


def find_export(artifact_dir: Path) -> Path:
    """The single profile_export_genai_perf.json in artifact_dir or one level below."""
    root = Path(artifact_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"artifact dir does not exist: {root}")
    found = sorted({*root.glob(EXPORT_NAME), *root.glob(f"*/{EXPORT_NAME}")})
    if not found:
        listing = sorted(str(p.relative_to(root)) for p in root.rglob("*"))[:20]
        raise FileNotFoundError(
            f"no {EXPORT_NAME} under {root} (genai-perf failed or did not finish? "
            f"check its log); found: {listing or 'nothing'}"
        )
    if len(found) > 1:
        raise ExportError(f"several exports under {root}, use one artifact dir per run: {found}")
    return found[0]


def parse_exports(artifact_dir: Path) -> dict[str, Any]:
    """Flat metrics from a run's export (ms for latencies, per second for throughputs).

    Keys: output_token_throughput_tok_s, request_throughput_req_s,
    {request_latency,time_to_first_token,inter_token_latency}_ms_{avg,p50,p99},
    output_sequence_length_avg, input_sequence_length_avg, request_count. Streaming-only
    metrics are None for a non-streaming run.
    """
    path = find_export(artifact_dir)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ExportError(f"{path}: not valid JSON ({exc})") from None
    return aggregate_metrics(data, path, "count")


def aggregate_metrics(data: dict, path: Path, count_unit: str) -> dict[str, Any]:
    """The BenchMetrics fields from an export's aggregates, the shape genai-perf's and AIPerf's share;
    `count_unit`: the unit the tool gives request_count in."""
    metrics: dict[str, Any] = {
        "output_token_throughput_tok_s": metric_stat(data, path, "output_token_throughput", "tokens/sec", "avg"),
        "request_throughput_req_s": metric_stat(data, path, "request_throughput", "requests/sec", "avg"),
    }
    for key, (unit, stem, streaming_only) in DISTRIBUTIONS.items():
        for stat in DISTRIBUTION_STATS:
            metrics[f"{stem}_{stat}"] = metric_stat(data, path, key, unit, stat, streaming_only)
    metrics["output_sequence_length_avg"] = metric_stat(data, path, "output_sequence_length", "tokens", "avg")
    metrics["input_sequence_length_avg"] = metric_stat(data, path, "input_sequence_length", "tokens", "avg", True)
    metrics["request_count"] = int(metric_stat(data, path, "request_count", count_unit, "avg"))
    return metrics


def metric_stat(
    data: dict, path: Path, key: str, unit: str, stat: str, optional: bool = False
) -> float | None:
    """One statistic of one metric ({"unit": ..., "avg": ..., "p50": ...}, the shape genai-perf's
    and AIPerf's exports share), its unit checked."""
    entry = data.get(key)
    if entry is None:
        if optional:
            return None
        raise ExportError(f"{path}: metric {key!r} missing (have {sorted(data)})")
    if entry.get("unit") != unit:
        raise ExportError(f"{path}: {key} is in {entry.get('unit')!r}, expected {unit!r}")
    value = entry.get(stat)
    if not isinstance(value, (int, float)):
        raise ExportError(f"{path}: {key}.{stat} is {value!r}, expected a number")
    return float(value)
