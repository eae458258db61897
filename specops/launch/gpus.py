"""The profile's `gpus` string as the Docker launcher's GPU request."""
from __future__ import annotations

GpuRequest = str | int | list[str] | None  # "all", a count, device ids; None: no GPU


def parse_gpus(value: str) -> GpuRequest:
    """"all", a count ("2"), or device ids ("0,2"); "" and "none" ask for no GPU."""
    if value in ("", "none"):
        return None
    if value == "all":
        return "all"
    return int(value) if value.isdigit() else [v.strip() for v in value.split(",") if v.strip()]
