"""AIPerf 0.13.0 as a benchmark tool, run from its own environment.

AIPerf's pins clash with this environment (transformers, among others), so it lives in a venv
of its own (`make install` creates `.venv-aiperf`) and is called through its CLI. How it drives
each API, and its command line, are in aiperf_endpoints.py; interleaved runs (several servers in
one run) in aiperf_interleave.py; its exports in aiperf_exports.py.

- Per-request speculative-decoding metrics: vLLM (>= 0.32.0, `--per-request-spec-decode-metrics`) puts
  `metrics.speculative_decoding` in a stream's final usage chunk (a non-streaming body's root otherwise).
  AIPerf 0.13.0 reads it itself (endpoints/base_endpoint.py extract_spec_decode_stats, called by
  openai_completions.py and openai_chat.py; spec_decode/vllm_adapter.py VLLMSpecDecodeAdapter) and writes
  it into each request's line of profile_export.jsonl as `spec_decode_acceptance` (common/models/
  record_models.py MetricRecordInfo; post_processors/record_export_jsonl_writer.py), beside the same
  request's latency: `--export-level records` suffices. `raw` (profile_export_raw.jsonl, every chunk of
  every response) would only cost disk, except in an interleaved run, where the answers say which server
  gave them.
"""
from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from specops.bench.aiperf_endpoints import ENDPOINTS, profile_command
from specops.bench.aiperf_exports import (
    answer_texts,
    answering_models,
    answers_of,
    parse_metrics,
    profiling_records,
    record_sample,
    records_metrics,
    request_errors,
    request_samples,
)
from specops.bench.aiperf_interleave import credit_records, why_not_interleaved
from specops.bench.prompts import write_prompts_jsonl
from specops.bench.tool import BenchJob, BenchTool, BenchToolError, ExportError, InterleavedJob, prompt_index
from specops.bench.tool_process import ToolExitError, run_logged
from specops.bench.toolchain import OFFLINE_VARS
from specops.host.liveness import Watch
from specops.host.processes import scrubbed_env
from specops.results.metrics import BenchRun
from specops.settings import env_name, installed_venv, settings

VERSION = "0.13.0"  # the release whose CLI and exports this adapter was written against
EXECUTABLE_VAR = env_name("specops_aiperf")
CHECKOUT = Path(__file__).resolve().parents[2]  # `make install` puts .venv-aiperf here
INSTALL_HINT = (f"`make install` creates .venv-aiperf with aiperf=={VERSION} (its pins clash with specops' "
                f"environment), or point {EXECUTABLE_VAR} at an aiperf {VERSION} executable")
# An interpreter's own settings would leak into AIPerf's venv.
_FOREIGN_VARS = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")


def executable() -> Path | None:
    """$SPECOPS_AIPERF, else the .venv-aiperf `make install` built (settings.installed_venv), else `aiperf` on
    PATH."""
    if (configured := settings().specops_aiperf) is not None:
        return configured
    candidate = installed_venv(".venv-aiperf", CHECKOUT, "bin/aiperf") / "bin" / "aiperf"
    if candidate.is_file():
        return candidate
    found = shutil.which("aiperf")
    return Path(found) if found else None


@functools.lru_cache(maxsize=8)
def _version_of(path: Path) -> str | None:
    try:
        done = subprocess.run([str(path), "--version"], capture_output=True, text=True, timeout=60,
                              env=tool_env())
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = done.stdout.strip().splitlines()
    return lines[-1].strip() if done.returncode == 0 and lines else None


def tool_env() -> dict[str, str]:
    """AIPerf's environment: no secrets, and not HF's offline mode.

    The tokenizer is a local directory, which loads without the network; but with
    HF_HUB_OFFLINE set, AIPerf 0.13.0 takes the name for a hub repo id
    (aiperf/common/tokenizer.py, Tokenizer._load_from_hub's offline branch) and fails with
    HFValidationError.
    """
    return {k: v for k, v in scrubbed_env(os.environ).items() if k not in _FOREIGN_VARS and k not in OFFLINE_VARS}


class AIPerf(BenchTool):
    name = "aiperf"
    apis = tuple(ENDPOINTS)  # preferred first: Triton's own endpoint, then completions (no chat template)
    # Each of them, for variants its interleave_blocker accepts (an OpenAI server needs a shared alias).
    interleaves = frozenset(ENDPOINTS)
    keeps_answers = True  # the raw export holds every answer's text (answer_texts)
    # AIPerf 0.13.0's records/records_manager.py (RecordsManager._on_credit_phase_start,
    # _on_credit_phase_sending_complete, _on_credit_phase_complete).
    progress_marks = (("Credit phase start: profiling", 0.05), ("requests. Waiting for all to complete", 0.8),
                      ("All requests have completed", 0.9))

    def preflight(self) -> list[str]:
        path = executable()
        if path is None or not path.is_file():
            return [f"AIPerf not found{f' at {path}' if path else ''}: {INSTALL_HINT}"]
        found = _version_of(path)
        if found != VERSION:
            return [f"{path} is AIPerf {found or '(version unknown: `aiperf --version` failed)'}; specops reads "
                    f"the CLI and exports of {VERSION}: {INSTALL_HINT}"]
        return []

    def version(self) -> str | None:
        path = executable()
        return _version_of(path) if path and path.is_file() else None

    def input_file(self, job: BenchJob | InterleavedJob) -> Path:
        return job.artifact_dir.parent / f"{job.artifact_dir.name}-input.jsonl"

    def command(self, job: BenchJob) -> list[str]:
        """`raw` exports keep each answer's text (what the lossless check compares), at the cost of disk only."""
        return profile_command(str(executable() or "aiperf"), [job], job.artifact_dir, self.input_file(job), "raw")

    def run(self, job: BenchJob, on_line: Callable[[str], None] | None = None,
            watch: Watch | None = None) -> BenchRun:
        self._preflighted()
        write_prompts_jsonl(job.prompts, self.input_file(job))
        with self._reporting_failures(job.artifact_dir, job.address, job.log_path):
            run_logged("aiperf", self.command(job), tool_env(), job.log_path, job.timeout_s, on_line, watch=watch)
            metrics = parse_metrics(job.artifact_dir)
            samples = request_samples(job.artifact_dir, prompt_index(job.prompts), job.round)
            records = profiling_records(job.artifact_dir)
        if len(samples) != metrics.request_count:
            raise BenchToolError(f"AIPerf exported {len(samples)} measured requests but counted "
                                 f"{metrics.request_count} (artifacts: {job.artifact_dir})")
        return BenchRun(metrics=metrics, samples=samples,
                        answers=answers_of(records, answer_texts(job.artifact_dir), prompt_index(job.prompts)))

    def interleave_blocker(self, jobs: Sequence[BenchJob]) -> str | None:
        return why_not_interleaved(jobs)

    def interleaved_command(self, job: InterleavedJob) -> list[str]:
        """The servers in job order; `raw` exports keep the answers, which say which server gave each."""
        return profile_command(str(executable() or "aiperf"), job.jobs, job.artifact_dir, self.input_file(job), "raw")

    def run_interleaved(self, job: InterleavedJob, on_line: Callable[[str], None] | None = None,
                        watch: Watch | None = None) -> list[BenchRun]:
        """The variants' requests alternate one by one. Which server answered each request is read from its
        answer (aiperf_interleave.py), not inferred from the order; every variant must have answered each
        measured prompt once."""
        self._preflighted()
        blocker = self.interleave_blocker(job.jobs)
        if blocker is not None:
            raise BenchToolError(f"AIPerf cannot interleave these variants: {blocker}")
        load, servers = job.load, len(job.jobs)
        write_prompts_jsonl([p for p in load.prompts for _ in range(servers)], self.input_file(job))
        addresses = ", ".join(j.address for j in job.jobs)
        with self._reporting_failures(job.artifact_dir, addresses, job.log_path):
            run_logged("aiperf", self.interleaved_command(job), tool_env(), job.log_path, job.timeout_s, on_line,
                       watch=watch)
            parse_metrics(job.artifact_dir)  # completeness and errors of the run as a whole
            answered = answering_models(job.artifact_dir, ENDPOINTS[load.api](load).answer_names)
            records = profiling_records(job.artifact_dir)
        prompt_of = prompt_index(load.prompts)
        credited = credit_records(job.jobs, records, answered, prompt_of, job.artifact_dir)
        texts = answer_texts(job.artifact_dir)
        return [BenchRun(metrics=records_metrics(mine),
                         samples=[record_sample(r, prompt_of, load.round, job.artifact_dir) for r in mine],
                         answers=answers_of(mine, texts, prompt_of))
                for mine in credited]

    def _preflighted(self) -> None:
        problems = self.preflight()
        if problems:
            raise BenchToolError("; ".join(problems))

    @contextmanager
    def _reporting_failures(self, artifact_dir: Path, address: str, log_path: Path) -> Iterator[None]:
        """A failed run's error says what the servers answered, which says more than AIPerf's exit."""
        artifact_dir.mkdir(parents=True, exist_ok=True)
        try:
            yield
        except (ToolExitError, ExportError) as err:
            failed = request_errors(artifact_dir)
            cause = f"requests failed at {address}: {'; '.join(failed)[:1000]}\n" if failed else ""
            raise BenchToolError(f"{cause}{err} (log: {log_path})") from err
