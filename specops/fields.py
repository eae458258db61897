"""Number types shared by every profile section, and the GPU request a profile's `gpus` names.

pydantic's lax mode takes YAML's `true` as 1 for an int or a float (so `num_requests: true`
would run one request), and a float field takes `.inf`/`.nan` (a timeout of "wait forever").
Strict numbers refuse booleans and quoted numbers but keep the JSON schema as it was; the
profile loader turns their errors into messages naming the field.
"""
from __future__ import annotations

from typing import Annotated

from pydantic import Field, Strict
from pydantic.fields import FieldInfo

# A day: every deadline specops waits on (a build, a benchmark run, a server start) fits in it,
# and a larger one is a unit mistake (milliseconds given as seconds) rather than a wish.
MAX_TIMEOUT_S = 24 * 3600

Count = Annotated[int, Strict()]
"""An int field (a count, a size, a seed)."""

Real = Annotated[float, Strict(), Field(allow_inf_nan=False)]
"""A float field: an int is fine, a boolean, inf or nan is not."""

Seconds = Annotated[float, Strict(), Field(gt=0, le=MAX_TIMEOUT_S, allow_inf_nan=False)]
"""A timeout: finite, positive, at most a day."""


def bounds(field: FieldInfo) -> tuple[float | None, float | None]:
    """A field's (ge, le) bounds, the tightest its constraints state; None for a side they leave open."""
    lows = [m.ge for m in field.metadata if getattr(m, "ge", None) is not None]
    highs = [m.le for m in field.metadata if getattr(m, "le", None) is not None]
    return max(lows, default=None), min(highs, default=None)


GpuRequest = str | int | list[str] | None  # the Docker launcher's GPU request: "all", a count, device ids; None


def parse_gpus(value: str) -> GpuRequest:
    """A profile's `gpus`: "all", a count ("2"), or device ids ("0,2"); "" and "none" ask for no GPU."""
    if value in ("", "none"):
        return None
    if value == "all":
        return "all"
    return int(value) if value.isdigit() else [v.strip() for v in value.split(",") if v.strip()]
