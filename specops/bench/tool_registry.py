"""The benchmark-tool registry: `benchmark.tool` in a profile names one of these."""
from __future__ import annotations

from specops.bench.tool import BenchTool
from specops.registry import Registry

BENCH_TOOLS: Registry[type[BenchTool]] = Registry("benchmark tool")
BENCH_TOOLS.register("genai-perf", "specops.bench.genai_perf_tool:GenaiPerf")
BENCH_TOOLS.register("aiperf", "specops.bench.aiperf_tool:AIPerf")
DEFAULT_TOOL = "genai-perf"


def bench_tool(name: str) -> BenchTool:
    return BENCH_TOOLS.get(name)()
