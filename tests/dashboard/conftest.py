"""Fixtures for the dashboard's browser tests: a whole Portico on a real port, and headless
Chromium driven by Selenium.

Both live for a module: starting them costs more than a scenario. Chromium is Debian's
(``chromium`` and ``chromium-driver``); without it the tests skip, except under ``CI=true``
where they fail so a missing browser cannot hide.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import shutil
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service

from tests.conftest import require
from tests.harness import Running, running, uvicorn_serving

# Generous for a loaded CI machine; a scenario that passes takes well under a second per wait.
WAIT_SECONDS = 15.0
START_SECONDS = 60.0


@dataclass
class LiveServer:
    """A Portico serving HTTP on ``url``, run by its own event loop in a thread."""

    url: str
    server: Running
    loop: asyncio.AbstractEventLoop

    def call(self, coroutine: Any) -> Any:
        """Run a coroutine on the server's loop (for setup and checks) and return its result."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(WAIT_SECONDS)


@contextlib.contextmanager
def live_portico(data_dir: Path, **changes: Any) -> Iterator[LiveServer]:
    """Start Portico and uvicorn (tests.harness) on a thread of their own; stop them on exit."""
    started: queue.Queue[Any] = queue.Queue()

    async def serve() -> None:
        async with (
            running(data_dir, **changes) as server,
            uvicorn_serving(server.portico.http_app) as address,
        ):
            stopping = asyncio.Event()
            live = LiveServer(f"http://{address}", server, asyncio.get_running_loop())
            started.put((live, stopping))
            await stopping.wait()

    def main() -> None:
        try:
            asyncio.run(serve())
        except BaseException as exc:  # reported to the test, not lost in the thread
            started.put(exc)

    thread = threading.Thread(target=main, name="portico-live", daemon=True)
    thread.start()
    item = started.get(timeout=START_SECONDS)
    if isinstance(item, BaseException):
        raise item
    live, stopping = item
    try:
        yield live
    finally:
        live.loop.call_soon_threadsafe(stopping.set)
        thread.join(START_SECONDS)
        if not started.empty():
            raise started.get()


@pytest.fixture(scope="module")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with live_portico(tmp_path_factory.mktemp("portico")) as live:
        yield live


@pytest.fixture(scope="session")
def chromium() -> tuple[str, str]:
    """The paths of Chromium and its driver; skips (fails under CI=true) without them."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if browser is None or driver is None:
        require("headless Chromium", "install Debian's chromium and chromium-driver")
    assert browser is not None and driver is not None
    return browser, driver


@contextlib.contextmanager
def chromium_session(chromium: tuple[str, str]) -> Iterator[Any]:
    """A headless Chromium session, closed at the end of the block."""
    browser_path, driver_path = chromium
    options = webdriver.ChromeOptions()
    options.binary_location = browser_path
    # As root in a container, with no network beyond loopback: no sandbox, no background calls.
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-quic",
        "--no-first-run",
        "--window-size=1280,1000",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(executable_path=driver_path))
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def browser(chromium: tuple[str, str], live_server: LiveServer) -> Iterator[Any]:
    """A headless Chromium session; it needs the server only to close before it."""
    with chromium_session(chromium) as driver:
        yield driver


@pytest.fixture(autouse=True)
def no_script_errors(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every browser scenario runs under the page's Content-Security-Policy without tripping it,
    and without an uncaught script error (a failed request's own console line is expected)."""
    if "browser" not in request.fixturenames:
        yield
        return
    browser = request.getfixturevalue("browser")
    browser.get_log("browser")  # what earlier scenarios left
    yield
    console = [entry["message"] for entry in browser.get_log("browser")]
    problems = [m for m in console if "Content Security Policy" in m or "Uncaught" in m]
    assert not problems, console
