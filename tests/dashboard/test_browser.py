"""The dashboard in headless Chromium against a real Portico: what a user would notice."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support import expected_conditions as visible
from selenium.webdriver.support.ui import WebDriverWait

from app.gateway.registry import Registry
from gen.scheduler import scheduler_pb2, scheduler_pb2_grpc
from tests.dashboard.conftest import WAIT_SECONDS, LiveServer
from tests.harness import ADMIN_PASSWORD
from tests.services.kudo.world import bearer, instance

pytestmark = pytest.mark.chromium

VERSION = "cnct.kaas.api.Cluster.GetVersionInformation"
CREATE_CLUSTER = "cnct.kaas.api.Cluster.CreateCluster"
LISTEN_EVENTS = "v1alpha.PublicAPI.ListenEvents"
SHOW_FLAVOR = "edgeproto.FlavorApi.ShowFlavor"
NODE_STATUS = "scheduler.NodeService.Status"


@pytest.fixture(autouse=True)
def no_script_errors(browser: WebDriver) -> Iterator[None]:
    """Every scenario runs under the page's Content-Security-Policy without tripping it, and
    without an uncaught script error (a failed request's own console line is expected)."""
    browser.get_log("browser")  # what earlier scenarios left
    yield
    console = [entry["message"] for entry in browser.get_log("browser")]
    problems = [m for m in console if "Content Security Policy" in m or "Uncaught" in m]
    assert not problems, console


def wait(browser: WebDriver) -> WebDriverWait:
    return WebDriverWait(browser, WAIT_SECONDS)


def by_id(browser: WebDriver, element_id: str) -> WebElement:
    return browser.find_element(By.ID, element_id)


def open_dashboard(browser: WebDriver, live: LiveServer, fragment: str = "") -> None:
    """Load the dashboard logged out (each test starts from a fresh session)."""
    browser.get(f"{live.url}/dashboard/")
    browser.execute_script("sessionStorage.clear()")
    browser.get(f"{live.url}/dashboard/{fragment}")
    browser.refresh()  # a fragment-only navigation would not reload the page
    wait(browser).until(lambda b: b.find_element(By.TAG_NAME, "body").get_attribute("data-ready"))


def log_in(browser: WebDriver, password: str = ADMIN_PASSWORD) -> None:
    """Fill in and send the login form."""
    wait(browser).until(visible.visibility_of_element_located((By.ID, "login-form")))
    by_id(browser, "username").clear()
    by_id(browser, "username").send_keys("admin")
    by_id(browser, "password").send_keys(password)
    by_id(browser, "login-submit").click()


def logged_in(browser: WebDriver, live: LiveServer, fragment: str = "") -> None:
    open_dashboard(browser, live, fragment)
    log_in(browser)
    wait(browser).until(visible.visibility_of_element_located((By.ID, "explorer")))


def select(browser: WebDriver, rpc: str) -> None:
    browser.find_element(By.CSS_SELECTOR, f'button.method[data-rpc="{rpc}"]').click()
    wait(browser).until(lambda b: by_id(b, "method-name").text == rpc)


def call(browser: WebDriver, until_state: str) -> str:
    """Press Call and wait for the call to reach ``until_state``; returns the status line."""
    by_id(browser, "call").click()
    status = by_id(browser, "response-status")
    wait(browser).until(lambda _: status.get_attribute("data-state") == until_state)
    return status.text


def violations(browser: WebDriver) -> list[str]:
    return [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#violations .field")]


def stored_token(browser: WebDriver) -> Any:
    return browser.execute_script("return sessionStorage.getItem('portico.token')")


def test_admin_logs_in_and_sees_every_rpc_grouped_by_api(browser, live_server):
    open_dashboard(browser, live_server)
    assert not by_id(browser, "explorer").is_displayed()
    log_in(browser)
    wait(browser).until(visible.visibility_of_element_located((By.ID, "explorer")))
    assert stored_token(browser)
    assert by_id(browser, "whoami").text == "Signed in as admin"

    listed = [
        e.get_attribute("data-rpc") for e in browser.find_elements(By.CSS_SELECTOR, "button.method")
    ]
    registry = Registry.from_package("gen")
    assert sorted(listed) == sorted(m.full_name for m in registry)
    assert by_id(browser, "method-count").text == f"{len(registry)} of {len(registry)} methods"
    apis = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#method-list .api > h2")]
    assert {"cnct.kaas.api", "edgeproto", "v1alpha", "scheduler", "stats"} <= set(apis)
    assert len(apis) == len(set(apis))  # each API once, its services together


def test_the_filter_narrows_the_list(browser, live_server):
    logged_in(browser, live_server)
    box = by_id(browser, "filter")
    box.send_keys("cluster version")

    def shown(b: WebDriver) -> list[str]:
        # One script instead of a WebDriver round trip per button.
        return b.execute_script(
            "return [...document.querySelectorAll('button.method')]"
            ".filter((b) => b.offsetParent !== null).map((b) => b.dataset.rpc)"
        )

    wait(browser).until(lambda b: shown(b) == [VERSION])
    apis = [e for e in browser.find_elements(By.CSS_SELECTOR, ".api") if e.is_displayed()]
    assert len(apis) == 1  # APIs with nothing left are hidden
    box.clear()
    box.send_keys(" ")  # an input event with an empty filter
    wait(browser).until(lambda b: len(shown(b)) == len(Registry.from_package("gen")))


def test_get_version_information_shows_its_reply(browser, live_server):
    logged_in(browser, live_server)
    select(browser, VERSION)
    assert by_id(browser, "method-kind").text == "unary"
    assert "version information" in by_id(browser, "method-description").text
    routes = by_id(browser, "method-routes").text
    assert "GET /api/v1/version" in routes
    assert "POST /cnct.kaas.api.Cluster/GetVersionInformation" in routes
    assert json.loads(by_id(browser, "request").get_attribute("value")) == {}

    status = call(browser, "done")
    assert status.startswith("200")
    reply = json.loads(by_id(browser, "response-body").text)
    assert reply["ok"] is True
    assert reply["version_information"]["git_version"]
    assert not by_id(browser, "error").is_displayed()


def test_a_link_to_a_method_opens_it(browser, live_server):
    logged_in(browser, live_server, f"#{VERSION}")
    wait(browser).until(lambda b: by_id(b, "method-name").text == VERSION)


def test_a_bad_request_names_the_field(browser, live_server):
    logged_in(browser, live_server)
    select(browser, CREATE_CLUSTER)
    # The skeleton comes from the request schema: every field at its default, nested expanded.
    skeleton = json.loads(by_id(browser, "request").get_attribute("value"))
    assert skeleton["name"] == "" and skeleton["worker_node_pools"] == []
    assert skeleton["control_plane_nodes"]["count"] == 0
    assert "Name of the cluster" in by_id(browser, "field-list").get_attribute("textContent")

    status = call(browser, "error")
    assert status.startswith("400")
    assert by_id(browser, "error-code").text == "INVALID_ARGUMENT (3)"
    assert "name" in violations(browser)


def test_a_server_stream_shows_results_live_until_stopped(browser, live_server):
    logged_in(browser, live_server)
    select(browser, LISTEN_EVENTS)
    assert by_id(browser, "method-kind").text == "server stream"
    by_id(browser, "call").click()
    stop = by_id(browser, "stop")
    wait(browser).until(visible.visibility_of(stop))
    # Start an instance once the stream is being served: its events can only arrive live.
    server = live_server.server
    runtime = server.portico.servicers["v1alpha.PublicAPI"]
    wait(browser).until(lambda _: runtime.open_streams == 1)  # type: ignore[attr-defined]
    token = live_server.call(server.login())
    pod = live_server.call(_start_instance(live_server, token))

    def event_ids(b: WebDriver) -> set[str]:
        shown = [json.loads(e.text) for e in b.find_elements(By.CSS_SELECTOR, "#stream > li")]
        return {event["id"] for result in shown for event in result["events"]}

    wait(browser).until(lambda b: pod in event_ids(b))  # the pod's events (after its image's)
    status = by_id(browser, "response-status")
    assert status.get_attribute("data-state") == "open"  # still streaming
    assert stop.is_displayed()

    stop.click()
    wait(browser).until(lambda _: status.get_attribute("data-state") == "stopped")
    wait(browser).until(lambda _: runtime.open_streams == 0)  # type: ignore[attr-defined]
    assert not stop.is_displayed()


async def _start_instance(live: LiveServer, token: str) -> str:
    """Create an instance (the in-process simulated nodes run it); returns its id."""
    stub = scheduler_pb2_grpc.InstanceServiceStub(live.server.channel)
    creating = stub.Create(instance("web"), metadata=bearer(token))
    first = await anext(creating.__aiter__())
    creating.cancel()
    return first.id


def test_a_server_stream_that_ends_says_so(browser, live_server):
    token = live_server.call(live_server.server.login())
    flavor = {"key": {"name": "x1.small"}, "ram": 1024, "vcpus": 1, "disk": 10}
    reply = live_server.call(
        live_server.server.http.post(
            "/create/flavor", json=flavor, headers={"authorization": f"Bearer {token}"}
        )
    )
    assert reply.status_code == 200, reply.text
    logged_in(browser, live_server)
    select(browser, SHOW_FLAVOR)
    status = call(browser, "ended")
    assert "1 result" in status
    [shown] = browser.find_elements(By.CSS_SELECTOR, "#stream > li")
    assert json.loads(shown.text)["key"] == {"name": "x1.small"}


def test_a_client_stream_sends_ndjson(browser, live_server):
    logged_in(browser, live_server)
    select(browser, NODE_STATUS)
    assert "NDJSON" in by_id(browser, "request-label").text
    editor = by_id(browser, "request")
    [line] = editor.get_attribute("value").splitlines()  # one message per line
    report = json.loads(line)
    assert report["id"] == ""
    assert report["status"] == scheduler_pb2.Status.DESCRIPTOR.values[0].name  # an enum's first
    assert report["resource"]["limit"] == {"cpu": 0, "memory": 0, "disk": 0}  # nested, expanded
    call(browser, "error")
    assert by_id(browser, "error-code").text == "INVALID_ARGUMENT (3)"
    assert violations(browser) == ["id"]


def test_a_wrong_password_shows_an_error(browser, live_server):
    open_dashboard(browser, live_server)
    log_in(browser, password="not-the-password")
    error = by_id(browser, "login-error")
    wait(browser).until(visible.visibility_of(error))
    assert error.text.startswith("Login failed:") and "password" in error.text
    assert not by_id(browser, "explorer").is_displayed()
    assert stored_token(browser) is None


def test_logout_returns_to_login_and_revokes_the_token(browser, live_server):
    logged_in(browser, live_server)
    token = stored_token(browser)
    by_id(browser, "logout").click()
    wait(browser).until(visible.visibility_of_element_located((By.ID, "login-form")))
    assert by_id(browser, "login-message").text == "Logged out."
    assert not by_id(browser, "explorer").is_displayed()
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
    wait(browser).until(visible.visibility_of_element_located((By.ID, "explorer")))
    wait(browser).until(lambda b: b.find_elements(By.CSS_SELECTOR, "button.method"))
    select(browser, VERSION)
    by_id(browser, "call").click()
    message = by_id(browser, "login-message")
    wait(browser).until(visible.visibility_of(message))
    assert "log in again" in message.text
    assert stored_token(browser) is None
