"""The dashboard in a real browser: Debian Chromium through Playwright against `python -m blockscope dashboard`.

Opens every page (via the sidebar navigation, in one session), waits for the plotly charts, asserts the
browser console has no errors and saves screenshots to a tmp dir (and docs/screenshot.png when
BLOCKSCOPE_SCREENSHOT=1). Uses the bundled H200 dataset when present, else the synthetic demo data.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
# (sidebar title, has charts)
PAGES = (
    ("Overview", False),
    ("Masked lanes", True),
    ("Occupancy", True),
    ("Latency", True),
    ("Tradeoffs", True),
    ("Backends", True),
    ("Run vs run", False),
    ("auto", True),
    ("Kernel evidence", True),
    ("Numerics", True),
    ("Run sweep", False),
    ("Export", False),
)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not CHROMIUM.exists(),
        reason="needs Debian chromium at /usr/bin/chromium (`make test` installs it: apt-get install chromium)",
    ),
]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    """`python -m blockscope dashboard` on a free localhost port; yields its URL, killed afterwards."""
    port = _free_port()
    cache = tmp_path_factory.mktemp("compile-cache")
    env = {**os.environ, "BLOCKSCOPE_CACHE_DIR": str(cache), "PYTHONUNBUFFERED": "1"}
    log = (tmp_path_factory.mktemp("streamlit") / "server.log").open("w")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "blockscope",
            "dashboard",
            "--server.port",
            str(port),
            "--server.headless",
            "true",
            "--server.address",
            "localhost",
            "--browser.gatherUsageStats",
            "false",
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://localhost:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                log.flush()
                raise RuntimeError(f"streamlit did not start: {Path(log.name).read_text()[-2000:]}")
            time.sleep(0.3)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


def _wait_idle(page, timeout_ms: int = 90000) -> None:
    """Wait until Streamlit has finished the script run: its running indicator absent for 1 s in a row."""
    running = "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')"
    deadline = time.monotonic() + timeout_ms / 1000
    page.wait_for_timeout(300)
    quiet = 0
    while quiet < 4:
        if time.monotonic() > deadline:
            raise TimeoutError("the app kept running")
        quiet = quiet + 1 if page.evaluate(running) else 0
        page.wait_for_timeout(250)


def test_every_page_renders_without_console_errors(server: str, tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    from blockscope.profiling.views.dashboard_data import BUNDLED_PATH

    errors: list[str] = []
    shots: dict[str, Path] = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        # tall viewport: Streamlit scrolls inside its own container, so full_page would stop at the viewport
        page = browser.new_page(viewport={"width": 1500, "height": 2600})
        page.on(
            "console",
            lambda m: errors.append(f"console: {m.text} {m.location.get('url', '')}") if m.type == "error" else None,
        )
        page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
        # the server's first session opens on a page's own address: no "Page not found" dialog (Streamlit's old
        # multipage mode answers so when the main script has a pages/ folder beside it)
        page.goto(f"{server}/latency-vs-n", wait_until="domcontentloaded")
        page.wait_for_selector("[data-testid='stSidebarNav']", timeout=60000)
        _wait_idle(page)
        assert page.get_by_text("Page not found").count() == 0, "a page's own address answered 'Page not found'"
        errors.clear()  # the frontend first probes /latency-vs-n/_stcore/health (404) to find the server's base path
        page.goto(server, wait_until="domcontentloaded")
        page.wait_for_selector("[data-testid='stSidebarNav']", timeout=60000)
        _wait_idle(page)
        # one navigation (st.navigation's), not a second one from a pages/ folder beside the main script
        assert page.locator("[data-testid='stSidebarNav']").count() == 1, "the sidebar shows more than one navigation"
        links = page.locator("[data-testid='stSidebarNav'] a").all_inner_texts()
        repeated = sorted({t for t in links if links.count(t) > 1})
        assert not repeated, f"pages listed twice in the sidebar navigation, first: {repeated[0]!r}"
        if not BUNDLED_PATH.exists():
            page.get_by_test_id("stRadioGroup").get_by_text("Demo data (synthetic)").click()
            _wait_idle(page)
        for title, has_charts in PAGES:
            page.locator("[data-testid='stSidebarNav'] a", has_text=title).first.click()
            _wait_idle(page)
            page.wait_for_selector("h1", timeout=30000)
            if has_charts:
                try:
                    page.wait_for_selector(".js-plotly-plot .main-svg", timeout=60000)
                except Exception as error:  # name the page (and keep its screenshot) instead of a bare timeout
                    if os.environ.get("BLOCKSCOPE_SHOTS_DIR"):
                        page.screenshot(
                            path=str(Path(os.environ["BLOCKSCOPE_SHOTS_DIR"]) / "failed.png"), full_page=True
                        )
                    raise AssertionError(f"{title}: no plotly chart drawn within 60 s") from error
            assert page.locator("[data-testid='stException']").count() == 0, f"{title}: exception shown"
            shot = tmp_path / f"{title.lower().replace(' ', '_')}.png"
            page.screenshot(path=str(shot), full_page=True)
            shots[title] = shot
            if title == "Latency":
                page.screenshot(
                    path=str(tmp_path / "readme.png"),  # the first screen only
                    clip={"x": 0, "y": 0, "width": 1500, "height": 1000},
                )
        browser.close()
    assert not errors, "\n".join(errors)
    assert all(path.stat().st_size > 10_000 for path in shots.values())
    if os.environ.get("BLOCKSCOPE_SHOTS_DIR"):  # keep every page's screenshot to look at
        keep = Path(os.environ["BLOCKSCOPE_SHOTS_DIR"])
        keep.mkdir(parents=True, exist_ok=True)
        for path in shots.values():
            shutil.copy(path, keep / path.name)
    if os.environ.get("BLOCKSCOPE_SCREENSHOT") == "1":
        (ROOT / "docs").mkdir(exist_ok=True)
        shutil.copy(tmp_path / "readme.png", ROOT / "docs" / "screenshot.png")


def _chips(page, label: str) -> list[str]:
    """The selected values of the sidebar multiselect labelled `label` (its chips' texts)."""
    box = page.get_by_test_id("stSidebar").get_by_test_id("stMultiSelect").filter(has_text=label).first
    return [t.strip() for t in box.locator("[data-tag] span[title]").all_inner_texts()]


@pytest.mark.parametrize("away", ["Upload results files", "Path on this machine", "Demo data (synthetic)"])
def test_filters_survive_a_data_source_round_trip_on_several_pages(server: str, away: str) -> None:
    """Bundled -> another source -> bundled again, on three pages: the Variants and num_warps multiselects hold
    the same selection as before the trip, and the page shows no 'No ... pairs' emptiness."""
    from playwright.sync_api import sync_playwright

    from blockscope.profiling.views.dashboard_data import BUNDLED_PATH

    if not BUNDLED_PATH.exists():
        pytest.skip("needs the bundled H200 dataset")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1500, "height": 2000})
        page.goto(server, wait_until="domcontentloaded")
        page.wait_for_selector("[data-testid='stSidebarNav']", timeout=60000)
        _wait_idle(page)
        radio = page.get_by_test_id("stSidebar").get_by_test_id("stRadioGroup")
        for title in ("Overview", "Latency", "Backends"):
            page.locator("[data-testid='stSidebarNav'] a", has_text=title).first.click()
            _wait_idle(page)
            before = (_chips(page, "Variants"), _chips(page, "num_warps"))
            assert before[0] and before[1], f"{title}: nothing selected before the trip"
            radio.get_by_text(away).click()
            _wait_idle(page)
            radio.get_by_text("Bundled H200 dataset").click()
            _wait_idle(page)
            after = (_chips(page, "Variants"), _chips(page, "num_warps"))
            assert after == before, f"{title}: filters changed by the trip to {away!r}: {before} -> {after}"
            assert page.get_by_text("No Blockscope/torch pairs").count() == 0, f"{title}: empty findings after the trip"
            assert page.get_by_text("had its value set via the Session State API").count() == 0, title
        browser.close()
