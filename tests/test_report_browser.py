"""The study report in a real browser (headless Chromium through Selenium): every figure loads, every link
resolves, nothing is wider than the window, and every figure is a vector PDF with a PNG preview.

Needs Chromium and its driver from the system's packages (Debian: ``apt-get install chromium chromium-driver``;
CI installs them) and Selenium (test extra); skipped otherwise.
"""

from __future__ import annotations

import functools
import http.server
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
DRIVER = shutil.which("chromedriver")
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(CHROMIUM is None or DRIVER is None, reason="no Chromium / chromedriver installed")]
# A reduced budget: every stage and every figure, in a fraction of the default study's time.
STUDY = ["study", "-B", "100", "--informativeness-lists", "40", "--incomplete-judgments-draws", "2", "--split-half-splits", "10",
         "--jobs", "1", "--no-progress"]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("browser") / "study"
    subprocess.run([sys.executable, "-c", "from meta_eval.cli import run; run()", *STUDY, "-o", str(out)],
                   check=True, capture_output=True, timeout=900)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(out))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield out, f"http://127.0.0.1:{server.server_address[1]}/report.html"
    finally:
        server.shutdown()


@pytest.fixture(scope="module")
def browser():
    webdriver = pytest.importorskip("selenium.webdriver")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--no-first-run"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=webdriver.ChromeService(executable_path=DRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


_LOADED = """
const images = [...document.images];
await Promise.all(images.map(i => i.complete ? null : new Promise(r => { i.onload = i.onerror = r; })));
return images.map(i => [i.getAttribute('src'), i.naturalWidth, i.naturalHeight]);
"""

_LINKS = """
const links = [...document.querySelectorAll('a[href]')].map(a => a.getAttribute('href'));
const statuses = await Promise.all(links.map(h => fetch(h, {method: 'HEAD'}).then(r => r.status, () => 0)));
return links.map((h, k) => [h, statuses[k]]);
"""

_OVERFLOW = """
const width = document.documentElement.clientWidth;
const wide = [...document.body.querySelectorAll('*')].filter(e => e.getBoundingClientRect().right > width + 1)
    .map(e => e.tagName + (e.id ? '#' + e.id : '') + ': ' + (e.textContent || '').slice(0, 40));
return [document.documentElement.scrollWidth, width, wide.slice(0, 5)];
"""


def _run(driver, body: str):
    return driver.execute_script("return (async () => {" + body + "})();")


def test_every_figure_loads_and_is_vector_with_a_preview(report, browser):
    folder, url = report
    browser.set_window_size(1280, 900)
    browser.get(url)
    images = _run(browser, _LOADED)
    assert len(images) >= 10  # every stage's figure
    for src, width, height in images:
        assert width > 0 and height > 0, f"{src} did not load"
        assert src.endswith(".png") and (folder / src).with_suffix(".pdf").is_file(), f"{src} has no PDF"
    hrefs = [h for h, _ in _run(browser, _LINKS)]
    assert {Path(src).with_suffix(".pdf").name for src, _, _ in images} <= set(hrefs)


def test_every_link_resolves(report, browser):
    _, url = report
    browser.get(url)
    links = _run(browser, _LINKS)
    assert links, "the report links its CSV, TeX and PDF files"
    broken = [(href, status) for href, status in links if status != 200]
    assert not broken, broken


@pytest.mark.parametrize("width", [1280, 800])
def test_nothing_is_wider_than_the_window(report, browser, width):
    _, url = report
    browser.set_window_size(width, 900)
    browser.get(url)
    _run(browser, _LOADED)
    scroll, client, wide = _run(browser, _OVERFLOW)
    assert scroll <= client, f"page {scroll} px wide in a {client} px window; too wide: {wide}"
