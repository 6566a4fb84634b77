"""Steps the browser tests share: open the dashboard, log in, move between views, look at it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support import expected_conditions as visible
from selenium.webdriver.support.ui import WebDriverWait

from gen.scheduler import scheduler_pb2_grpc
from tests.dashboard.conftest import WAIT_SECONDS, LiveServer
from tests.harness import ADMIN_PASSWORD
from tests.services.kudo.world import bearer, instance

# Where the docs' screenshots are written when the tests are asked to (re)make them.
SCREENSHOTS_ENV = "PORTICO_SCREENSHOTS"


def wait(browser: WebDriver) -> WebDriverWait:
    return WebDriverWait(browser, WAIT_SECONDS)


def by_id(browser: WebDriver, element_id: str) -> WebElement:
    return browser.find_element(By.ID, element_id)


def css(browser: WebDriver, selector: str) -> list[WebElement]:
    return browser.find_elements(By.CSS_SELECTOR, selector)


def open_dashboard(browser: WebDriver, live: LiveServer, fragment: str = "") -> None:
    """Load the dashboard logged out (each test starts from a fresh session)."""
    browser.get(f"{live.url}/dashboard/")
    browser.execute_script("sessionStorage.clear()")
    browser.get(f"{live.url}/dashboard/{fragment}")
    browser.refresh()  # a fragment-only navigation would not reload the page
    wait(browser).until(lambda b: b.find_element(By.TAG_NAME, "body").get_attribute("data-ready"))


def log_in(browser: WebDriver, username: str = "admin", password: str = ADMIN_PASSWORD) -> None:
    """Fill in and send the login form."""
    wait(browser).until(visible.visibility_of_element_located((By.ID, "login-form")))
    by_id(browser, "username").clear()
    by_id(browser, "username").send_keys(username)
    by_id(browser, "password").send_keys(password)
    by_id(browser, "login-submit").click()


def logged_in(
    browser: WebDriver,
    live: LiveServer,
    fragment: str = "",
    username: str = "admin",
    password: str = ADMIN_PASSWORD,
) -> None:
    open_dashboard(browser, live, fragment)
    log_in(browser, username, password)
    wait(browser).until(visible.visibility_of_element_located((By.ID, "app")))


def go(browser: WebDriver, fragment: str) -> None:
    """Follow a link inside the page (a hash change: no reload)."""
    browser.execute_script("location.hash = arguments[0]", fragment)


def click_first(browser: WebDriver, selector: str) -> None:
    """Click the first element ``selector`` finds, finding it again if the view drew it anew
    between the finding and the click (its tables refresh every few seconds)."""

    def clicked(b: WebDriver) -> bool:
        try:
            css(b, selector)[0].click()
        except (IndexError, StaleElementReferenceException):
            return False
        return True

    wait(browser).until(clicked)


def texts(browser: WebDriver, selector: str) -> list[str]:
    """The text of every element matching ``selector``, in one round trip."""
    return browser.execute_script(
        "return [...document.querySelectorAll(arguments[0])].map((e) => e.textContent.trim())",
        selector,
    )


def row_keys(browser: WebDriver, table_label: str) -> list[str]:
    """The data-key of each row of the table labelled ``table_label``."""
    return browser.execute_script(
        "const t = document.querySelector(`table[aria-label='${arguments[0]}']`);"
        "return t ? [...t.querySelectorAll('tbody tr[data-key]')].map((r) => r.dataset.key)"
        ".filter(Boolean) : []",
        table_label,
    )


def screenshot(browser: WebDriver, name: str, fallback: Path) -> Path:
    """Save a PNG of the page as ``name``: into the folder named by PORTICO_SCREENSHOTS when set
    (that is how docs/screenshots is remade), else into ``fallback``."""
    folder = Path(os.environ.get(SCREENSHOTS_ENV) or fallback)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.png"
    assert browser.save_screenshot(str(path)), path
    return path


def horizontal_overflow(browser: WebDriver) -> Any:
    """How many CSS pixels the page is wider than the window (0 when nothing sticks out)."""
    return browser.execute_script(
        "return document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )


async def start_instance(live: LiveServer, token: str, name: str) -> str:
    """Create an instance (the in-process simulated nodes run it); returns its id."""
    stub = scheduler_pb2_grpc.InstanceServiceStub(live.server.channel)
    creating = stub.Create(instance(name), metadata=bearer(token))
    first = await anext(creating.__aiter__())
    creating.cancel()
    return first.id
