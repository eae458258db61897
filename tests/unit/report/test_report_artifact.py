"""The run's markdown artifact: headed by what the run is, its plot inline over HTTP, its files linked."""
from __future__ import annotations

from specops.report.writer import report_artifact, write_report
from tests.results_factory import run_result


def test_the_report_artifact_embeds_the_plot_and_links_the_files_over_http(tmp_path, monkeypatch):
    root = tmp_path / "artifacts"
    monkeypatch.setenv("SPECOPS_ARTIFACTS", str(root))
    monkeypatch.setenv("SPECOPS_ARTIFACTS_URL", "http://bench-1:4201")
    result = run_result()
    run_dir = root / "ngram-local" / result.run_id
    result = result.model_copy(update={"run_dir": str(run_dir)})
    files = write_report(result, run_dir)
    md = report_artifact(result, files, "ngram-local - K=2, c=4 (sweep cell)")
    url = f"http://bench-1:4201/ngram-local/{result.run_id}"
    lines = md.splitlines()
    assert lines[0] == f"# ngram-local - K=2, c=4 (sweep cell) - {result.run_id}"
    assert f"![comparison.png]({url}/comparison.png)" in lines
    assert f"[run directory]({url}/)" in md and f"[report.md]({url}/report.md)" in md
    assert f"[manifest.json]({url}/manifest.json)" in md
    assert "| variant | method |" in md and md.count("# ngram-local") == 1  # report.md's own heading replaced


def test_without_an_artifacts_server_the_artifact_says_where_the_plot_is(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECOPS_ARTIFACTS", str(tmp_path))
    monkeypatch.delenv("SPECOPS_ARTIFACTS_URL", raising=False)
    result = run_result()
    files = write_report(result, tmp_path / "run")
    md = report_artifact(result, files, "ngram-local")
    assert "![" not in md and f"comparison.png: `{tmp_path / 'run' / 'comparison.png'}` on " in md


def test_a_failed_runs_artifact_links_its_logs(tmp_path, monkeypatch):
    from specops.results.model import Status

    monkeypatch.setenv("SPECOPS_ARTIFACTS", str(tmp_path))
    monkeypatch.setenv("SPECOPS_ARTIFACTS_URL", "http://bench-1:4201")
    result = run_result(status=Status.FAILED)
    run_dir = tmp_path / "ngram-local" / result.run_id
    log = run_dir / "logs" / "server-speculative.log"
    result = result.model_copy(update={"run_dir": str(run_dir), "failure": result.failure.model_copy(
        update={"logs": [str(log)]})})
    md = report_artifact(result, write_report(result, run_dir), "ngram-local")
    assert f"- [server-speculative.log](http://bench-1:4201/ngram-local/{result.run_id}/logs/server-speculative.log)" \
        in md.splitlines()
