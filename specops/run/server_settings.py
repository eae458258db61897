"""How servers are run: the profile's `serving` section, which every backend reads."""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from specops.fields import Seconds


class Serving(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    host: str = Field("127.0.0.1", description="address servers bind to (loopback unless you say otherwise)")
    ready_timeout_s: Seconds = Field(600, gt=0, description="deadline for server and model readiness")
    stop_timeout_s: Seconds = Field(20, gt=0, description="SIGTERM grace before SIGKILL at teardown")
    request_timeout_s: Seconds = Field(300, gt=0, description="deadline for one smoke/check request")
    exclusive: bool | None = Field(
        None, strict=True,
        description="hold the host's slot(s) from the first engine build to the last server stop, so runs queue "
                    "instead of sharing a device: null = a host lock per GPU, or one for the host's CPU, which orders "
                    "every run of the host (CLI or worker), plus a Prefect slot per GPU; true = a Prefect slot on CPU "
                    "too; false = neither (see specops/cost/slots.py)")
