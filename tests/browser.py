"""Headless Chromium (Debian's chromium and chromium-driver, installed by `make install`) driving the
real Prefect UI: what an artifact page shows a user, read from the rendered DOM.

Never a downloaded browser: the driver path is given, so Selenium Manager is not run
(selenium/webdriver/common/driver_finder.py, DriverFinder._binary_paths skips it when Service.path is set).
"""
from __future__ import annotations

import shutil
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psutil
from selenium import webdriver
from selenium.common.exceptions import TimeoutException, WebDriverException
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

from specops.host.processes import descendants, kill_process_tree

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
# As root Chromium needs --no-sandbox; without the background-networking flags it keeps dialling
# Google services, which the closed network here refuses (and which would slow every page).
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage", "--window-size=1400,1000")
QUIT_TIMEOUT_S = 15

# The Prefect UI's routes (prefect/server/ui/assets/index-*.js, the router's `path:` entries under /artifacts
# and /runs).
ARTIFACT_PAGE = "/artifacts/artifact/{id}"
ARTIFACT_KEY_PAGE = "/artifacts/key/{key}"
FLOW_RUN_PAGE = "/runs/flow-run/{id}"

# An artifact's page (prefect/server/ui, v1): its data (markdown, link, table or image) renders in
# .artifact-data-view; its description (markdown, images included) above it in .artifact-description.
CONTENT_SELECTOR = ".artifact-data-view"
PAGE_SELECTOR = ".artifact-description, .artifact-data-view"


def chromium_missing() -> str | None:
    """Why headless Chromium cannot run here (None when it can)."""
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.is_file()]
    return f"{' and '.join(missing)} missing: `make install` installs chromium chromium-driver" if missing else None


@contextmanager
def headless_chromium(page_load_timeout_s: float = 30) -> Iterator[WebDriver]:
    """A headless Chromium with a new empty profile; quit after, its processes gone within
    QUIT_TIMEOUT_S (chromedriver runs in a session of its own, so its browser children are found)."""
    problem = chromium_missing()
    assert problem is None, problem
    profile = Path(tempfile.mkdtemp(prefix="specops-chromium-"))
    options = Options()
    options.binary_location = str(CHROMIUM)
    for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    service = Service(executable_path=str(CHROMEDRIVER), popen_kw={"start_new_session": True})
    driver = None
    try:
        driver = webdriver.Chrome(service=service, options=options)
        driver.set_page_load_timeout(page_load_timeout_s)
        yield driver
    finally:
        tree = descendants(service.process.pid) if service.process is not None else []
        if driver is not None:
            # quit() can hang on a wedged browser: bounded in a thread, the process group is killed after
            quitter = threading.Thread(target=_quiet_quit, args=(driver,), daemon=True)
            quitter.start()
            quitter.join(QUIT_TIMEOUT_S)
        if service.process is not None:
            kill_process_tree(service.process, timeout_s=5)
        for p in psutil.wait_procs([p for p in tree if p.is_running()], timeout=5)[1]:
            p.kill()
        shutil.rmtree(profile, ignore_errors=True)


def _quiet_quit(driver: WebDriver) -> None:
    try:
        driver.quit()
    except WebDriverException:
        pass


@dataclass(frozen=True)
class Image:
    src: str
    complete: bool
    natural_width: int

    @property
    def loaded(self) -> bool:
        """What a user sees as a picture: fetched and decoded (a broken image is complete with width 0)."""
        return self.complete and self.natural_width > 0


@dataclass(frozen=True)
class Rendered:
    url: str
    text: str
    images: list[Image]
    links: list[str]


# Every element matching the selector, in document order (a.href and img.currentSrc are absolute).
_READ_CONTENT = """
const roots = Array.from(document.querySelectorAll(arguments[0]));
if (!roots.length) return null;
const all = sel => roots.flatMap(r => Array.from(r.querySelectorAll(sel)));
return {
  text: roots.map(r => r.innerText).join('\\n'),
  images: all('img').map(i => [i.currentSrc || i.src, i.complete, i.naturalWidth]),
  links: all('a[href]').map(a => a.href),
};
"""

# `complete` is true once an image has loaded or failed; a failed one has naturalWidth 0.
_IMAGES_SETTLED = "return Array.from(document.querySelectorAll(arguments[0] + ' img')).every(i => i.complete);"


def open_rendered(driver: WebDriver, url: str, ready: str, read: str | None = None,
                  timeout_s: float = 30) -> Rendered:
    """Open `url`, wait until `ready` (a CSS selector) has rendered text or an image and the page's
    images have finished loading or failed, and read the images and links of `read` (default: `ready`)."""
    driver.get(url)
    read = read or ready

    def rendered(d: WebDriver) -> bool:
        content = d.execute_script(_READ_CONTENT, ready)
        return bool(content and (content["text"].strip() or content["images"])) and \
            d.execute_script(_IMAGES_SETTLED, "body")

    try:
        WebDriverWait(driver, timeout_s, poll_frequency=0.2).until(rendered)
    except TimeoutException:
        raise AssertionError(f"{url}: no {ready} rendered within {timeout_s}s; page text:\n"
                             f"{driver.execute_script('return document.body.innerText')[:2000]}") from None
    content = driver.execute_script(_READ_CONTENT, read)
    return Rendered(url=url, text=content["text"],
                    images=[Image(src, complete, width) for src, complete, width in content["images"]],
                    links=content["links"])


def artifact_page(driver: WebDriver, ui_base: str, artifact_id: str, timeout_s: float = 30) -> Rendered:
    """The artifact's own page as rendered, description and data (ui_base: the server's root, e.g.
    http://127.0.0.1:4200)."""
    return open_rendered(driver, ui_base.rstrip("/") + ARTIFACT_PAGE.format(id=artifact_id), CONTENT_SELECTOR,
                         PAGE_SELECTOR, timeout_s)


def artifact_key_page(driver: WebDriver, ui_base: str, key: str, timeout_s: float = 30) -> Rendered:
    """The latest version of a keyed artifact, as a user reaches it: the key's page is a timeline of
    versions (newest first, each a link to its artifact page, no content of its own); follow the newest."""
    driver.get(ui_base.rstrip("/") + ARTIFACT_KEY_PAGE.format(key=urllib.parse.quote(key, safe="")))
    try:
        newest = WebDriverWait(driver, timeout_s, poll_frequency=0.2).until(
            lambda d: d.execute_script(_NEWEST_VERSION))
    except TimeoutException:
        raise AssertionError(f"artifact key {key!r}: no version listed on its UI page within {timeout_s}s; page "
                             f"text:\n{driver.execute_script('return document.body.innerText')[:2000]}") from None
    return open_rendered(driver, newest, CONTENT_SELECTOR, PAGE_SELECTOR, timeout_s)


_NEWEST_VERSION = "const a = document.querySelector('a[href*=\"/artifacts/artifact/\"]'); return a && a.href;"


def flow_run_artifact_pages(driver: WebDriver, ui_base: str, flow_run_id: str, timeout_s: float = 30) -> list[str]:
    """The artifact pages the flow run's Artifacts tab links to (the tab lists cards, not content: each
    artifact is seen on its own page). Empty when none appears within timeout_s."""
    driver.get(ui_base.rstrip("/") + FLOW_RUN_PAGE.format(id=flow_run_id))
    try:
        WebDriverWait(driver, timeout_s, poll_frequency=0.2).until(
            lambda d: d.find_elements(By.CSS_SELECTOR, ARTIFACTS_TAB))[0].click()
        return WebDriverWait(driver, timeout_s, poll_frequency=0.2).until(
            lambda d: d.execute_script(_TAB_ARTIFACT_LINKS))
    except TimeoutException:
        return []


def flow_run_page_text(driver: WebDriver, ui_base: str, flow_run_id: str, containing: str,
                       timeout_s: float = 30) -> str:
    """The flow run's page as it opens (its Logs tab), once its text holds `containing` (AssertionError with the
    page text if it does not within timeout_s)."""
    driver.get(ui_base.rstrip("/") + FLOW_RUN_PAGE.format(id=flow_run_id))
    text = "return document.body.innerText"
    try:
        WebDriverWait(driver, timeout_s, poll_frequency=0.5).until(lambda d: containing in d.execute_script(text))
    except TimeoutException:
        raise AssertionError(f"flow run {flow_run_id}'s page never said {containing!r} within {timeout_s}s; its "
                             f"text:\n{driver.execute_script(text)[:2000]}") from None
    return driver.execute_script(text)


# A deployment's "Custom run" form; a parameter with choices renders as a native <select> in its schema property.
DEPLOYMENT_RUN_PAGE = "/deployments/deployment/{id}/run"
_PROPERTY_OPTIONS = """
const label = Array.from(document.querySelectorAll('.schema-form-property'))
  .find(p => (p.querySelector('.schema-form-property__label') || {}).innerText?.startsWith(arguments[0]));
const select = label && label.querySelector('select.p-native-select__control');
return select && select.options.length ? Array.from(select.options).map(o => o.value) : null;
"""


def form_profile_choices(driver: WebDriver, ui_base: str, deployment_id: str, timeout_s: float = 30) -> list[str]:
    """The options of the `profile` select in the deployment's Custom run form, as the browser renders them."""
    driver.get(ui_base.rstrip("/") + DEPLOYMENT_RUN_PAGE.format(id=deployment_id))
    try:
        return WebDriverWait(driver, timeout_s, poll_frequency=0.2).until(
            lambda d: d.execute_script(_PROPERTY_OPTIONS, "profile"))
    except TimeoutException:
        raise AssertionError(f"deployment {deployment_id}: no profile select in its run form within {timeout_s}s; "
                             f"page text:\n{driver.execute_script('return document.body.innerText')[:2000]}") from None


# The flow run page's tabs are <li class="p-tab" id="artifacts" area-controls="artifacts-content">.
ARTIFACTS_TAB = "li.p-tab#artifacts"
_TAB_ARTIFACT_LINKS = """
const links = Array.from(document.querySelectorAll('#artifacts-content a[href*="/artifacts/artifact/"]'));
return links.length ? Array.from(new Set(links.map(a => a.href))) : null;
"""


def unreachable_links(links: list[str], timeout_s: float = 10) -> dict[str, str]:
    """The http(s) links that do not answer 200 (fetched with urllib, not the browser), each with why;
    any other scheme (file://, ...) is unreachable for a user's browser and reported as such."""
    failures = {}
    for link in links:
        scheme = urllib.parse.urlsplit(link).scheme
        if scheme not in ("http", "https"):
            failures[link] = f"scheme {scheme!r}: a browser cannot open it from the UI"
            continue
        try:
            with urllib.request.urlopen(link, timeout=timeout_s) as response:
                if response.status != 200:
                    failures[link] = f"HTTP {response.status}"
        except (urllib.error.URLError, OSError) as e:
            failures[link] = str(e)
    return failures


def save_screenshot(driver: WebDriver, path: Path) -> Path:
    """A PNG of the whole page as the user sees it now (for a failing test's report)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    time.sleep(0.2)  # a just-settled page may still be laying out
    driver.save_screenshot(str(path))
    return path
