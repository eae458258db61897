"""Acceptance: one definition (`model.Acceptance`) and parsers from each backend's own counters.

Every parser names its source in `Acceptance.source`; `mean_accepted_per_step` is
1 + accepted / verification steps and `acceptance_rate` accepted / drafted, whatever the
backend calls them.
"""
from specops.acceptance.model import Acceptance, analytical_bound
from specops.acceptance.trtllm_iter_stats import from_iteration_stats
from specops.acceptance.trtllm_perf_metrics import from_perf_metrics, parse_perf_metrics
from specops.acceptance.vllm_log import from_vllm_log

__all__ = ["Acceptance", "analytical_bound", "from_iteration_stats", "from_perf_metrics", "from_vllm_log",
           "parse_perf_metrics"]
