"""Smoke request and the lossless check (temperature 0, same prompts, identical text)."""
from __future__ import annotations

from prefect import get_run_logger

from prefect_adapters.step import step
from specops.backends.base import Backend, Server
from specops.pipeline.check import Checked, Pace, compare_checked, greedy_outputs, smoke
from specops.results.model import Lossless
from specops.run.rundir import RunDir
from specops.run.variant import Variant


@step(timed="check")
def send_smoke_request(backend: Backend, server: Server, variant: Variant, run: RunDir) -> Pace:
    """One short request; fails the run early if the server answers nothing. Returns its pace."""
    pace = Pace()
    text = smoke(backend, server, variant, pace)
    get_run_logger().info("%s smoke ok in %.1fs: %r", variant.name, pace.seconds, text[:60])
    return pace


@step(timed="check")
def generate_check_outputs(backend: Backend, server: Server, variant: Variant, prompts: list[str], max_tokens: int,
                           run: RunDir, chat: bool = False) -> tuple[list[str], Pace]:
    """Greedy outputs for the lossless prompts (chat requests where the benchmark sends those), saved into the run
    directory, and their pace."""
    pace = Pace()
    outputs = greedy_outputs(backend, server, variant, prompts, max_tokens, pace, chat)
    run.write_json(f"check/{variant.name}.json", [{"prompt": p, "output": o} for p, o in zip(prompts, outputs)])
    get_run_logger().info("%s: %d check outputs, %.3fs per token", variant.name, len(outputs), pace.per_token_s)
    return outputs, pace


@step
def compare_check_outputs(base: Checked, speculative: Checked, run: RunDir) -> Lossless:
    """Compare base and speculative outputs to the same prompts; a mismatch makes the run INVALID."""
    result = compare_checked(base, speculative)
    run.write_json("check/lossless.json", result.model_dump(mode="json") | {"valid": result.valid})
    log = get_run_logger()
    if result.valid:
        log.info("lossless check passed on %d prompts (%s)", result.compared, result.source)
    else:
        log.warning("lossless check FAILED: %s", result.model_dump(mode="json"))
    return result
