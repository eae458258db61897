"""Judge a profile's newest run against its history, say so as events, draw the trend."""
from __future__ import annotations

import socket
from pathlib import Path

from prefect import get_run_logger
from prefect.artifacts import create_link_artifact, create_markdown_artifact
from prefect.events import emit_event

from prefect_adapters.step import step
from specops.regression.policy import RegressionPolicy
from specops.regression.runs import profile_runs
from specops.regression.suite import EVENT, resource_id
from specops.regression.table import verdict_markdown, verdict_table
from specops.regression.trend import trend_dir, write_trend
from specops.regression.verdict import HISTORY_LIMIT, MetricVerdict, evaluate
from specops.report.writer import artifact_key, link_markdown, public_url
from specops.results.compat import ReadNotes
from specops.results.model import RunResult
from specops.results.store import ResultsStore


@step
def read_history(profile: str) -> list[RunResult]:
    """The profile's runs in the results database, every host, oldest first (a sweep's cells left out).
    A row this specops cannot read (a newer one's) is left out with a warning, never the end of the judging."""
    notes = ReadNotes()
    with ResultsStore.open() as store:
        runs = store.history(profile, limit=HISTORY_LIMIT, notes=notes)
    for line in notes.lines():
        get_run_logger().warning("%s", line)
    return sorted(profile_runs(runs), key=lambda r: r.started_at)


@step
def judge_newest_run(history: list[RunResult], policy: RegressionPolicy) -> list[MetricVerdict]:
    """Each metric of the newest run against the median of the runs before it."""
    if verdicts := evaluate(history, policy):
        get_run_logger().info("%s, run %s:\n%s", verdicts[0].profile, history[-1].run_id, verdict_table(verdicts))
    return verdicts


@step
def announce_regression(verdict: MetricVerdict) -> None:
    """One `specops.regression.detected` event: what prefect.yaml's automation notifies about."""
    payload = {"profile": verdict.profile, "metric": verdict.metric, "baseline": verdict.baseline,
               "value": verdict.value, "threshold": verdict.threshold, "runs": verdict.violating_uids,
               "run": verdict.run_uid}
    emit_event(event=EVENT, resource={"prefect.resource.id": resource_id(verdict.profile),
                                      "prefect.resource.name": verdict.profile}, payload=payload)
    get_run_logger().warning("regression: %s %s %s (baseline %s), runs %s", verdict.profile, verdict.metric,
                             verdict.value, verdict.baseline, ", ".join(u[:12] for u in verdict.violating_uids))


# What the plot draws (specops/regression/trend.py png_figure), said under it: the UI shows no alt text.
TREND_CAPTION = ("Each metric's runs over time in their verdict's colour, the baseline dashed, and the band a new run "
                 "must stay inside, labelled by what set it (noise, A/A-widened, counting band, host drift); where "
                 "every baseline run measured the same value, the threshold, dotted. Only runs of the newest run's "
                 "hardware and benchmark shape are drawn.")


@step
def publish_trend(profile: str, history: list[RunResult], policy: RegressionPolicy,
                  verdicts: list[MetricVerdict]) -> tuple[Path, Path]:
    """trend.html (interactive) and trend.png under artifacts/trends/<profile>/, linked from the flow run."""
    html, png = write_trend(history, policy, trend_dir(profile))
    markdown = "\n".join([f"# {profile}: the newest run against its baseline", "",
                          link_markdown(png, f"{profile} trend", image=True), "",
                          TREND_CAPTION, "",
                          link_markdown(html, "interactive trend (trend.html)"), "",
                          verdict_markdown(verdicts)])
    create_markdown_artifact(key=artifact_key(profile, "verdicts"), markdown=markdown,
                             description=f"{profile}: each metric of the newest run against its baseline")
    create_link_artifact(key=artifact_key(profile, "trend"), link=public_url(html),
                         link_text=f"{socket.gethostname()}:{html}", description=f"{profile}: metrics over time")
    get_run_logger().info("trend of %s: %s, %s", profile, html, png)
    return html, png
