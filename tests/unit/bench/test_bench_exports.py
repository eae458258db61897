"""Reading genai-perf exports.

fixtures/profile_export_genai_perf.json was captured from a REAL run of genai-perf 0.0.16 +
perf_analyzer 2.51.0 against tritonserver 2.51 (nvidia-pytriton 0.7.0) serving the product's
Python-backend model (specops/runtime/triton_model.py) with the stand-in echo engine of
tests/integration/bench, captured by

    SPECOPS_CAPTURE_GENAI_PERF_EXPORT=tests/unit/bench/fixtures/profile_export_genai_perf.json \
        pytest tests/integration/bench -k fixed_output

whose genai-perf command line was

    genai-perf profile -m bench_standin --endpoint-type kserve --backend vllm --streaming
      --url 127.0.0.1:47005 --tokenizer <embedded SmolLM2-135M-Instruct dir> --concurrency 1
      --input-file <tmp>/input.jsonl --artifact-dir <tmp>/genai-perf --random-seed 0
      --request-count 6 --warmup-request-count 1 --output-tokens-mean 16
      --output-tokens-stddev 0 --output-tokens-mean-deterministic
      --extra-inputs '{"sampling_parameters": "{\"ignore_eos\": true, \"max_tokens\": 16,
                       \"min_tokens\": 16, \"temperature\": 0.0}"}'

(the full settings are in the file's "input_config").
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from specops.bench.genai_perf import EXPORT_NAME, find_export, parse_exports
from specops.bench.tool import ExportError

FIXTURE = Path(__file__).parent / "fixtures" / EXPORT_NAME
# Where genai-perf 0.0.16 writes it: <artifact-dir>/<model>-<service kind>-<backend>-concurrency<N>/
RUN_SUBDIR = "bench_standin-triton-vllm-concurrency1"


@pytest.fixture
def artifact_dir(tmp_path: Path) -> Path:
    run_dir = tmp_path / "genai-perf" / RUN_SUBDIR
    run_dir.mkdir(parents=True)
    shutil.copyfile(FIXTURE, run_dir / EXPORT_NAME)
    return tmp_path / "genai-perf"


def test_real_export_parses_to_flat_metrics(artifact_dir):
    metrics = parse_exports(artifact_dir)
    assert metrics == {
        "output_token_throughput_tok_s": pytest.approx(491.2996027891842),
        "request_throughput_req_s": pytest.approx(17.339985980794737),
        "request_latency_ms_avg": pytest.approx(57.525037999999995),
        "request_latency_ms_p50": pytest.approx(42.5568615),
        "request_latency_ms_p99": pytest.approx(124.2545688),
        "time_to_first_token_ms_avg": pytest.approx(17.70992983333333),
        "time_to_first_token_ms_p50": pytest.approx(3.6186399999999996),
        "time_to_first_token_ms_p99": pytest.approx(80.45362705000001),
        "inter_token_latency_ms_avg": pytest.approx(1.4679088333333332),
        "inter_token_latency_ms_p50": pytest.approx(1.4844929999999998),
        "inter_token_latency_ms_p99": pytest.approx(1.6262821499999998),
        "output_sequence_length_avg": pytest.approx(28.333333333333332),
        "input_sequence_length_avg": pytest.approx(107.5),
        "request_count": 6,
    }


def test_export_found_in_the_run_subdir_or_directly(artifact_dir, tmp_path):
    assert find_export(artifact_dir) == artifact_dir / RUN_SUBDIR / EXPORT_NAME
    flat = tmp_path / "flat"
    flat.mkdir()
    shutil.copyfile(FIXTURE, flat / EXPORT_NAME)
    assert find_export(flat) == flat / EXPORT_NAME


def test_missing_export_is_a_clear_error(tmp_path):
    (tmp_path / "run" / "sub").mkdir(parents=True)
    (tmp_path / "run" / "sub" / "profile_export.json").write_text("{}")
    with pytest.raises(FileNotFoundError, match=rf"no {EXPORT_NAME} under .*check its log.*profile_export.json"):
        parse_exports(tmp_path / "run")
    with pytest.raises(FileNotFoundError, match="artifact dir does not exist"):
        parse_exports(tmp_path / "nowhere")


def test_two_runs_in_one_artifact_dir_are_refused(artifact_dir):
    other = artifact_dir / "bench_standin-triton-vllm-concurrency4"
    other.mkdir()
    shutil.copyfile(FIXTURE, other / EXPORT_NAME)
    with pytest.raises(ExportError, match="several exports"):
        parse_exports(artifact_dir)


def _rewrite(artifact_dir: Path, edit) -> None:
    path = artifact_dir / RUN_SUBDIR / EXPORT_NAME
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))


def test_non_streaming_run_has_no_token_timings(artifact_dir):
    def drop_streaming(data):
        for key in ("time_to_first_token", "time_to_second_token", "inter_token_latency"):
            del data[key]

    _rewrite(artifact_dir, drop_streaming)
    metrics = parse_exports(artifact_dir)
    assert metrics["time_to_first_token_ms_avg"] is None and metrics["inter_token_latency_ms_p99"] is None
    assert metrics["request_latency_ms_avg"] == pytest.approx(57.525037999999995)


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda d: d.pop("request_latency"), "metric 'request_latency' missing"),
        (lambda d: d["request_latency"].update(unit="s"), "request_latency is in 's', expected 'ms'"),
        (lambda d: d["output_token_throughput"].update(avg="N/A"), "output_token_throughput.avg is 'N/A'"),
    ],
)
def test_unexpected_shapes_are_errors(artifact_dir, edit, message):
    _rewrite(artifact_dir, edit)
    with pytest.raises(ExportError, match=message):
        parse_exports(artifact_dir)


def test_broken_json_is_an_error(artifact_dir):
    (artifact_dir / RUN_SUBDIR / EXPORT_NAME).write_text("{truncated")
    with pytest.raises(ExportError, match="not valid JSON"):
        parse_exports(artifact_dir)
