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
