"""CPU-seconds of a container: its cgroup's whole usage, from the Docker stats API.

`cpu_stats.cpu_usage.total_usage` is cumulative nanoseconds of every process in the container's
cgroup (cgroup v2 `cpu.stat usage_usec` x 1000, v1 `cpuacct.usage`), including processes that
already exited, so unlike a process-tree walk nothing escapes it. Stats are asked one-shot
(API >= 1.41) so the daemon answers at once instead of sampling twice, about a second apart.
"""
from __future__ import annotations

from typing import Any

ZERO_TIME = "0001-01-01"  # Go's zero time.Time: the daemon had nothing to read


class ContainerStatsMissing(RuntimeError):
    """The daemon's stats carry no CPU usage (the container is not running, or the daemon hides it)."""


def container_cpu_seconds(container: Any) -> float:
    """Cumulative CPU seconds of a docker-py Container (`stats(stream=False)`)."""
    from docker.errors import InvalidVersion

    try:
        stats = container.stats(stream=False, one_shot=True)
    except InvalidVersion:  # API < 1.41: the daemon samples twice before answering
        stats = container.stats(stream=False)
    stats = stats or {}
    total = ((stats.get("cpu_stats") or {}).get("cpu_usage") or {}).get("total_usage")
    # A container that is not running gets zeroed stats read at Go's zero time, not an error.
    if total is None or str(stats.get("read", "")).startswith(ZERO_TIME):
        name = getattr(container, "name", None) or getattr(container, "id", "?")
        status = getattr(container, "status", None)
        raise ContainerStatsMissing(f"container {name} (status {status}): no CPU usage in its stats "
                                    f"(cpu_stats.cpu_usage.total_usage missing or read at zero time); is it running?")
    return total / 1e9
