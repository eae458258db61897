"""RunResults with chosen metric values, one a day: the factory's real-shaped run with its speculative
variant's figures replaced."""
from __future__ import annotations

from specops.acceptance.model import Acceptance
from specops.results.model import GpuRecord, RunResult, Status
from specops.results.role import CALIBRATE, RunRole
from tests.results_factory import T0, metrics, run_result

DAY = 86400.0


def run(day: float, *, speedup: float = 1.40, tok_s: float = 22.0, accept_len: float = 2.5, itl_ms: float = 40.0,
        positions: list[float] | None = None, status: Status = Status.OK, cpu: str = "AMD EPYC 7B13",
        gpus: list[str] | None = None, uid: str | None = None, overrides: list[str] | None = None,
        host_tok_s: float = 16.0) -> RunResult:
    """A run of ngram-local started `day` days after T0 with these values (acceptance length = 1 +
    accepted / drafts over 100 drafts; `positions` are per-position acceptance rates; `host_tok_s`
    is the base arm's tokens/s, the host's own speed)."""
    base = run_result(uid=uid or f"{int(day * 1000):08d}".ljust(32, "0"), started_at=T0 + day * DAY, status=status,
                      speedup=speedup, base_tok_s=host_tok_s)
    host = base.host.model_copy(update={"cpu_model": cpu, "gpus": [
        GpuRecord(index=i, name=name) for i, name in enumerate(gpus or [])]})
    update = {"host": host, "overrides": overrides if overrides is not None else base.overrides}
    if status.ended_early:
        return base.model_copy(update=update)
    spec, plain = base.variants
    acceptance = Acceptance("runtime counters", 100, 400, (accept_len - 1) * 100,
                            accepted_per_position=[rate * 100 for rate in positions] if positions else None)
    spec = spec.model_copy(update={"metrics": metrics(tok_s, itl_ms=itl_ms), "acceptance": acceptance})
    return base.model_copy(update={**update, "variants": [spec, plain]})


def baseline(days: int = 3, **values) -> list[RunResult]:
    """`days` identical ok runs on days 0 .. days-1."""
    return [run(d, **values) for d in range(days)]


def aa_run(day: float, point: float) -> RunResult:
    """An A/A run (method none, role calibrate) of the profile with this false speedup."""
    return run(day, speedup=point, uid=f"aa{int(day * 1000):030d}").model_copy(
        update={"method": "none", "role": RunRole(kind=CALIBRATE)})
