"""Progress artifacts: how far a long step has got, on the flow run's page in the Prefect UI.

They carry no key: a key files an artifact on the Artifacts page as the latest of a series (the
report, the comparison table), while progress belongs to the one run.
"""
from __future__ import annotations

import contextvars
from uuid import UUID

from prefect import get_run_logger
from prefect.artifacts import create_progress_artifact, update_progress_artifact

from specops.run.progress import Progress, Throttled

# At most one update per step this often (plus the final one): a step reports every answered
# prompt, optimizer step or tool line, and each update is an API call.
MIN_INTERVAL_S = 5.0


class ProgressArtifact:
    """One progress artifact of the current task run's flow run; `report` is the throttled callback
    the Prefect-free code is handed. Made inside a task (the artifact is linked to its run)."""

    def __init__(self, description: str, min_interval_s: float = MIN_INTERVAL_S):
        self.description = description
        self.id: UUID = create_progress_artifact(0.0, description=description)
        # Reports also arrive on other threads (a tool's output reader), which do not inherit the
        # task's context: updates run in a copy of it, so they reach the API the task talks to.
        self._context = contextvars.copy_context()
        self._warned = False
        self.report: Progress = Throttled(self._send, min_interval_s)

    def done(self, note: str = "") -> None:
        self.report(1.0, note)

    def _send(self, fraction: float, note: str) -> None:
        text = f"{self.description}: {note}" if note else self.description
        try:
            self._context.copy().run(update_progress_artifact, self.id, round(100 * fraction, 1), description=text)
        except Exception as err:  # the UI's progress bar must never fail the step it shows
            if not self._warned:
                self._warned = True
                message = f"progress artifact {self.id} not updated (further failures not logged): {err}"
                self._context.copy().run(lambda: get_run_logger().warning(message))
