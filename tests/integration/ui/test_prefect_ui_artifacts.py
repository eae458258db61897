"""What the real Prefect UI shows a user on an artifact's page, read from headless Chromium (tests/browser.py):
a real Prefect server, artifacts made by a real flow run, images and pages served by a stdlib HTTP server
on 127.0.0.1.

- a markdown artifact's http image, a data: URI image and a description's image load (complete, naturalWidth > 0), as does an
  image artifact's; its link is an <a href> over HTTP that answers 200;
- a broken image (404) is seen as not loaded, and 404 and file:// links as unreachable: the check can fail;
- a key's page leads to its newest version; the flow run's Artifacts tab lists every artifact page.
"""
from __future__ import annotations

import base64
import functools
import http.server
import json
import struct
import subprocess
import sys
import threading
import zlib

import pytest

from tests.browser import (
    artifact_key_page,
    artifact_page,
    flow_run_artifact_pages,
    headless_chromium,
    unreachable_links,
)
from tests.integration.support import prefect_server, service_env

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def png(width: int = 40, height: int = 20) -> bytes:
    """A solid red RGB PNG (no imaging library needed)."""
    rows = b"".join(b"\x00" + b"\xc8\x1e\x1e" * width for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


# One flow run makes every artifact (in a process of its own: Prefect's event and log senders end with it);
# its last line is the JSON of the artifact ids by name and the flow run's id.
_MAKE_ARTIFACTS = """
import json, sys
from prefect import flow
from prefect.artifacts import create_image_artifact, create_markdown_artifact
from prefect.context import get_run_context

site, data_uri = sys.argv[1], sys.argv[2]

@flow(name="ui-artifacts")
def make():
    ids = {
        "plot": create_markdown_artifact(key="plot", markdown=f"# Plot\\n\\n![plot]({site}/plot.png)\\n\\n"
                                         f"[the report]({site}/report.html)\\n"),
        # the description renders above the data on its page (and on the run's Artifacts tab card)
        "inline": create_markdown_artifact(key="inline", markdown=f"![inline plot]({data_uri})\\n",
                                           description=f"![thumbnail]({site}/plot.png?thumbnail)"),
        "image": create_image_artifact(key="image", image_url=f"{site}/plot.png"),
        "broken": create_markdown_artifact(key="broken", markdown=f"![gone]({site}/missing.png)\\n\\n"
                                           f"[gone]({site}/missing.html) [on disk](file:///tmp/report.html)\\n"),
        # a second version of "plot": its key's page must lead here, not to the first
        "plot_v2": create_markdown_artifact(key="plot", markdown=f"![plot v2]({site}/plot.png?v=2)\\n"),
    }
    return {**{name: str(i) for name, i in ids.items()}, "flow_run": str(get_run_context().flow_run.id)}

print(json.dumps(make()))
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A stdlib HTTP server on 127.0.0.1 serving plot.png and report.html; its base URL."""
    root = tmp_path_factory.mktemp("site")
    (root / "plot.png").write_bytes(png())
    (root / "report.html").write_text("<h1>report</h1>")

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(root)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_port}"
    finally:
        httpd.shutdown()
        thread.join(10)
        httpd.server_close()


@pytest.fixture(scope="module")
def ui(tmp_path_factory, site):
    """(UI base URL, artifact ids by name, a headless Chromium): a Prefect server of its own with its UI."""
    tmp = tmp_path_factory.mktemp("prefect-ui")
    env = service_env(tmp)
    with prefect_server(env, tmp / "prefect-server.log") as api:
        data_uri = "data:image/png;base64," + base64.b64encode(png(60, 30)).decode()
        made = subprocess.run([sys.executable, "-c", _MAKE_ARTIFACTS, site, data_uri],
                              env=dict(env, PREFECT_API_URL=api), capture_output=True, text=True, timeout=120)
        assert made.returncode == 0, made.stderr[-3000:]
        ids = json.loads(made.stdout.strip().splitlines()[-1])
        with headless_chromium() as driver:
            yield api.removesuffix("/api"), ids, driver


@pytest.mark.parametrize(("name", "count"), [("plot", 1), ("inline", 2), ("image", 1)])
def test_artifact_images_load(ui, name, count):
    base, ids, driver = ui
    page = artifact_page(driver, base, ids[name])
    assert len(page.images) == count, f"{page.url}: {page.images}; text: {page.text!r}"
    assert all(image.loaded for image in page.images), page.images


def test_markdown_link_opens_over_http(ui, site):
    base, ids, driver = ui
    page = artifact_page(driver, base, ids["plot"])
    assert page.links == [f"{site}/report.html"]
    assert unreachable_links(page.links) == {}


def test_broken_image_and_links_are_detected(ui, site):
    base, ids, driver = ui
    page = artifact_page(driver, base, ids["broken"])
    assert [(image.src, image.loaded, image.natural_width) for image in page.images] == \
        [(f"{site}/missing.png", False, 0)]
    failures = unreachable_links(page.links)
    assert "404" in failures[f"{site}/missing.html"]
    assert "scheme 'file'" in failures["file:///tmp/report.html"]


def test_key_page_leads_to_newest_version(ui, site):
    base, ids, driver = ui
    page = artifact_key_page(driver, base, "plot")
    assert page.url.endswith(ids["plot_v2"])
    assert [(image.src, image.loaded) for image in page.images] == [(f"{site}/plot.png?v=2", True)]


def test_flow_run_artifacts_tab_lists_every_artifact(ui):
    base, ids, driver = ui
    pages = flow_run_artifact_pages(driver, base, ids["flow_run"])
    artifact_ids = {name: i for name, i in ids.items() if name != "flow_run"}
    assert sorted(url.rsplit("/", 1)[-1] for url in pages) == sorted(artifact_ids.values())
