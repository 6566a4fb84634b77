"""Logging in and out, and what each role is offered: headless Chromium against a real Portico."""

from __future__ import annotations

from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support import expected_conditions as visible

from app import catalog
from app.calls.callers import Role
from tests.dashboard.pages import by_id, css, go, log_in, logged_in, open_dashboard, texts, wait

pytestmark = pytest.mark.chromium

VIEWER = ("watcher", "password1")
allows = catalog.policy(catalog.registry()).allows


def stored_token(browser: WebDriver) -> Any:
    return browser.execute_script("return sessionStorage.getItem('portico.token')")


def test_login_shows_progress_then_the_dashboard(browser, live_server):
    open_dashboard(browser, live_server)
    assert not by_id(browser, "app").is_displayed()
    # A slow network makes the wait visible (a real login takes seconds: the hash is slow).
    browser.execute_cdp_cmd("Network.enable", {})
    browser.execute_cdp_cmd(
        "Network.emulateNetworkConditions",
        {"offline": False, "latency": 1500, "downloadThroughput": -1, "uploadThroughput": -1},
    )
    try:
        log_in(browser)
        progress = by_id(browser, "login-progress")
        wait(browser).until(visible.visibility_of(progress))
        assert by_id(browser, "login-submit").get_attribute("disabled")
        assert by_id(browser, "login-form").get_attribute("aria-busy") == "true"
    finally:
        browser.execute_cdp_cmd(
            "Network.emulateNetworkConditions",
            {"offline": False, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1},
        )
    wait(browser).until(visible.visibility_of_element_located((By.ID, "app")))
    assert not by_id(browser, "login-progress").is_displayed()
    assert stored_token(browser)
    assert by_id(browser, "whoami").text == "admin"
    assert by_id(browser, "role").text == "admin"
    views = texts(browser, "#nav a")
    assert views == ["Clusters", "Runtime", "Edge", "Storage", "Explorer", "History"]
    # The first view opens, and the page says which one.
    wait(browser).until(lambda b: b.execute_script("return location.hash") == "#/kaas")
    assert css(browser, "#nav a[aria-current='page']")[0].text == "Clusters"


def test_a_wrong_password_shows_an_error(browser, live_server):
    open_dashboard(browser, live_server)
    log_in(browser, password="not-the-password")
    error = by_id(browser, "login-error")
    wait(browser).until(visible.visibility_of(error))
    assert error.text.startswith("Login failed:") and "password" in error.text
    assert not by_id(browser, "app").is_displayed()
    assert stored_token(browser) is None


def test_logout_returns_to_login_and_revokes_the_token(browser, live_server):
    logged_in(browser, live_server)
    token = stored_token(browser)
    by_id(browser, "logout").click()
    wait(browser).until(visible.visibility_of_element_located((By.ID, "login-form")))
    assert by_id(browser, "login-message").text == "Logged out."
    assert stored_token(browser) is None
    refused = live_server.call(
        live_server.server.http.get("/api/v1/version", headers={"authorization": f"Bearer {token}"})
    )
    assert refused.status_code == 401


def test_an_unauthenticated_reply_returns_to_login(browser, live_server):
    open_dashboard(browser, live_server)
    browser.execute_script(
        "sessionStorage.setItem('portico.token', 'not-a-token');"
        "sessionStorage.setItem('portico.user', 'admin')"
    )
    browser.refresh()
    message = by_id(browser, "login-message")
    wait(browser).until(visible.visibility_of(message))  # the first view's first call is refused
    assert "log in again" in message.text
    assert stored_token(browser) is None


@pytest.fixture(scope="module")
def viewer(live_server):
    live_server.call(live_server.server.add_account(VIEWER[0], "viewer", VIEWER[1]))
    return VIEWER


def test_a_viewer_sees_read_views_and_no_write_action(browser, live_server, viewer):
    logged_in(browser, live_server, "#/kaas", *viewer)
    assert by_id(browser, "role").text == "viewer"
    wait(browser).until(lambda b: b.find_elements(By.CSS_SELECTOR, "table[aria-label='Clusters']"))
    # The views, and a cluster page (its actions are drawn before its data arrives).
    for view, title in (
        ("#/kaas", "KaaS clusters"),
        ("#/kaas/any-cluster", "Cluster any-cluster"),
        ("#/runtime", "Scheduler and runtime"),
        ("#/edge", "Edge"),
        ("#/storage", "Storage"),
    ):
        go(browser, view)
        wait(browser).until(lambda b, t=title: texts(b, "#view .view-head h2") == [t])
        assert not css(browser, "[data-action]"), view  # no create, scale, delete, stop...
    go(browser, "#/explorer")
    wait(browser).until(lambda b: b.find_elements(By.CSS_SELECTOR, "a.method"))
    listed = browser.execute_script(
        "return [...document.querySelectorAll('a.method')].map((a) => a.dataset.rpc)"
    )
    expected = [m.full_name for m in catalog.registry() if allows(Role.VIEWER, m.full_name)]
    assert sorted(listed) == sorted(expected)
    assert "cnct.kaas.api.Cluster.DeleteCluster" not in listed
    # A method the role may not call, opened by its link, says so instead of offering a form.
    go(browser, "#/explorer/cnct.kaas.api.Cluster.DeleteCluster")
    wait(browser).until(lambda b: "may not call" in by_id(b, "placeholder").text)
    assert not by_id(browser, "method").is_displayed()


def test_the_page_offers_what_the_server_policy_allows(browser, live_server):
    """The page's copy of the role policy agrees with the server's for every RPC and role."""
    open_dashboard(browser, live_server)
    methods = [m.full_name for m in catalog.registry()]
    roles = [r.value for r in Role] + ["nobody"]
    page = browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "import('./js/session.js').then(({ allows }) => done("
        "  arguments[1].map((role) => arguments[0].map((rpc) => allows(role, rpc)))));",
        methods,
        roles,
    )
    server = [[allows(role, rpc) for rpc in methods] for role in roles]
    assert page == server
