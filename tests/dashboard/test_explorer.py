"""The explorer view in headless Chromium against a real Portico: every RPC, a form built from
its request schema, JSON for experts, streams, curl/grpcurl and the history."""

from __future__ import annotations

import json
import shlex

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support import expected_conditions as visible

from app.gateway.registry import Registry
from tests.dashboard.pages import by_id, css, go, logged_in, start_instance, texts, wait

pytestmark = pytest.mark.chromium

VERSION = "cnct.kaas.api.Cluster.GetVersionInformation"
CREATE_CLUSTER = "cnct.kaas.api.Cluster.CreateCluster"
LISTEN_EVENTS = "v1alpha.PublicAPI.ListenEvents"
SHOW_FLAVOR = "edgeproto.FlavorApi.ShowFlavor"
NODE_STATUS = "scheduler.NodeService.Status"
CREATE_FLAVOR = "edgeproto.FlavorApi.CreateFlavor"


def select(browser: WebDriver, rpc: str) -> None:
    browser.find_element(By.CSS_SELECTOR, f'a.method[data-rpc="{rpc}"]').click()
    wait(browser).until(lambda b: by_id(b, "method-name").text == rpc)


def call(browser: WebDriver, until_state: str) -> str:
    """Press Call and wait for the call to reach ``until_state``; returns the status line."""
    by_id(browser, "call").click()
    status = by_id(browser, "response-status")
    wait(browser).until(lambda _: status.get_attribute("data-state") == until_state)
    return status.text


def violations(browser: WebDriver) -> list[str]:
    return texts(browser, "#violations .field")


def json_mode(browser: WebDriver) -> None:
    by_id(browser, "mode-json").click()
    wait(browser).until(lambda b: by_id(b, "request").is_displayed())


def test_every_rpc_is_listed_grouped_by_api(browser, live_server):
    logged_in(browser, live_server, "#/explorer")
    listed = browser.execute_script(
        "return [...document.querySelectorAll('a.method')].map((a) => a.dataset.rpc)"
    )
    registry = Registry.from_package("gen")
    assert sorted(listed) == sorted(m.full_name for m in registry)  # an admin may call all
    assert by_id(browser, "method-count").text == f"{len(registry)} of {len(registry)} methods"
    apis = texts(browser, "#method-list .api > h2")
    assert {"cnct.kaas.api", "edgeproto", "v1alpha", "scheduler", "stats"} <= set(apis)
    assert len(apis) == len(set(apis))  # each API once, its services together


def test_the_filter_narrows_the_list(browser, live_server):
    logged_in(browser, live_server, "#/explorer")
    box = by_id(browser, "filter")
    box.send_keys("cluster version")
    shown = (
        "return [...document.querySelectorAll('a.method')]"
        ".filter((a) => a.offsetParent !== null).map((a) => a.dataset.rpc)"
    )
    wait(browser).until(lambda b: b.execute_script(shown) == [VERSION])
    assert len([e for e in css(browser, ".api") if e.is_displayed()]) == 1


def test_a_call_shows_its_reply_and_markdown_renders_as_markup(browser, live_server):
    logged_in(browser, live_server, "#/explorer")
    select(browser, VERSION)
    assert by_id(browser, "method-kind").text == "unary"
    description = by_id(browser, "method-description")
    # `...` in the description is code, not backticks.
    codes = [e.text for e in description.find_elements(By.TAG_NAME, "code")]
    assert "/cnct.kaas.api.Cluster/GetVersionInformation" in codes
    assert "`" not in description.text
    routes = by_id(browser, "method-routes").get_attribute("textContent")
    assert "GET /api/v1/version" in routes
    status = call(browser, "done")
    assert status.startswith("200")
    reply = json.loads(by_id(browser, "response-body").text)
    assert reply["ok"] is True and reply["version_information"]["git_version"]


def test_markdown_cannot_inject_html(browser, live_server):
    logged_in(browser, live_server, "#/explorer")
    hostile = (
        '<img src=x onerror="window.hacked=1"> **bold** `code` '
        "[ok](https://example.org) [bad](javascript:alert(1))\n\n- one\n- <b>two</b>"
    )
    made = browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "import('./js/markdown.js').then(({ renderMarkdown }) => {"
        "  const box = document.createElement('div');"
        "  box.append(renderMarkdown(arguments[0]));"
        "  document.body.append(box);"
        "  done({ html: box.innerHTML, tags: [...box.querySelectorAll('*')].map((e) => e.tagName),"
        "         links: [...box.querySelectorAll('a')].map((a) => a.getAttribute('href')),"
        "         hacked: window.hacked === 1 });"
        "  box.remove();"
        "});",
        hostile,
    )
    assert set(made["tags"]) <= {"P", "STRONG", "CODE", "A", "UL", "LI", "EM"}
    assert "IMG" not in made["tags"] and "B" not in made["tags"]
    assert made["links"] == ["https://example.org"]  # javascript: stays text
    assert "&lt;img" in made["html"]
    assert not made["hacked"]


def test_deep_links_follow_hash_changes_and_back(browser, live_server):
    logged_in(browser, live_server, f"#{VERSION}")  # a link from before the views still works
    wait(browser).until(lambda b: by_id(b, "method-name").text == VERSION)
    assert browser.execute_script("return location.hash") == f"#/explorer/{VERSION}"
    go(browser, f"#/explorer/{CREATE_CLUSTER}")
    wait(browser).until(lambda b: by_id(b, "method-name").text == CREATE_CLUSTER)
    browser.back()
    wait(browser).until(lambda b: by_id(b, "method-name").text == VERSION)
    browser.forward()
    wait(browser).until(lambda b: by_id(b, "method-name").text == CREATE_CLUSTER)


def test_an_untouched_form_sends_nothing_and_the_error_names_the_field(browser, live_server):
    logged_in(browser, live_server, "#/explorer")
    select(browser, CREATE_CLUSTER)
    assert by_id(browser, "request-form").is_displayed()
    status = call(browser, "error")
    assert status.startswith("400")
    assert by_id(browser, "error-code").text == "INVALID_ARGUMENT (3)"
    assert "name" in violations(browser)
    # Only what was set goes out: the form sent {} (no worker_node_pools: []).
    json_mode(browser)
    assert json.loads(by_id(browser, "request").get_attribute("value")) == {}
    # Nor a template of zero values for a big request: an untouched ShowAppInst asks for all.
    go(browser, "#/explorer/edgeproto.AppInstApi.ShowAppInst")
    wait(browser).until(
        lambda b: by_id(b, "method-name").text == "edgeproto.AppInstApi.ShowAppInst"
    )
    assert call(browser, "ended").startswith("200")
    sent = browser.execute_script("return JSON.parse(sessionStorage.getItem('portico.history'))")
    assert sent[0]["rpc"] == "edgeproto.AppInstApi.ShowAppInst" and sent[0]["body"] == "{}"


def test_a_form_built_create_with_nested_and_repeated_fields(browser, live_server):
    logged_in(browser, live_server, "#/explorer")
    select(browser, CREATE_FLAVOR)
    form = by_id(browser, "request-form")
    form.find_element(By.CSS_SELECTOR, "details[data-path='key'] > summary").click()
    form.find_element(By.NAME, "key.name").send_keys("m1.form")
    form.find_element(By.NAME, "ram").send_keys("512")
    form.find_element(By.NAME, "vcpus").send_keys("2")
    # A repeated field: add two rows, remove the first.
    add = form.find_element(By.CSS_SELECTOR, "button[data-add='fields']")
    add.click()
    add.click()
    form.find_element(By.NAME, "fields.0").send_keys("dropped")
    form.find_element(By.NAME, "fields.1").send_keys("kept")
    form.find_element(By.CSS_SELECTOR, "fieldset[data-path='fields'] li button").click()
    json_mode(browser)
    sent = json.loads(by_id(browser, "request").get_attribute("value"))
    assert sent == {"key": {"name": "m1.form"}, "ram": "512", "vcpus": "2", "fields": ["kept"]} or (
        sent == {"key": {"name": "m1.form"}, "ram": 512, "vcpus": 2, "fields": ["kept"]}
    )
    by_id(browser, "mode-form").click()  # the form is rebuilt from the JSON
    assert (
        by_id(browser, "request-form").find_element(By.NAME, "key.name").get_attribute("value")
        == "m1.form"
    )
    # Sent without the field list (Create takes no update mask).
    form = by_id(browser, "request-form")
    form.find_element(By.CSS_SELECTOR, "fieldset[data-path='fields'] li button").click()
    assert call(browser, "done").startswith("200")
    token = live_server.call(live_server.server.login())
    shown = live_server.call(
        live_server.server.http.post(
            "/show/flavor",
            json={"key": {"name": "m1.form"}},
            headers={"authorization": f"Bearer {token}"},
        )
    )
    result = json.loads(shown.text.splitlines()[0])["result"]
    assert result["ram"] in ("512", 512) and result["vcpus"] in ("2", 2)


def test_enum_fields_are_dropdowns(browser, live_server):
    logged_in(browser, live_server, "#/explorer")
    select(browser, LISTEN_EVENTS)
    form = by_id(browser, "request-form")
    form.find_element(By.CSS_SELECTOR, "details[data-path='filter'] > summary").click()
    form.find_element(By.CSS_SELECTOR, "button[data-add='filter.types']").click()
    dropdown = form.find_element(By.NAME, "filter.types.0")
    assert dropdown.tag_name == "select"
    options = [o.get_attribute("value") for o in dropdown.find_elements(By.TAG_NAME, "option")]
    assert options[0] == "" and "EVENT_TYPE_POD_STARTED" in options


def test_typed_inputs_for_times_and_64_bit_integers(browser, live_server):
    logged_in(browser, live_server, "#/explorer")
    # No request of these APIs holds a google.protobuf.Timestamp, so a schema made here has one.
    made = browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "import('./js/forms.js').then(({ buildForm }) => {"
        "  const form = buildForm({ type: 'object', properties: {"
        "    at: { type: 'string', format: 'date-time' }, n: { type: 'integer' } } });"
        "  const input = form.node.querySelector('[name=at]');"
        "  input.value = '2025-01-31T12:00:05';"
        "  done({ type: input.type, value: form.value(),"
        "         expected: new Date('2025-01-31T12:00:05').toISOString() });"
        "});"
    )
    assert made["type"] == "datetime-local"  # picked in local time...
    assert made["value"] == {"at": made["expected"]}  # ...sent as RFC 3339 in UTC

    go(browser, f"#/explorer/{LISTEN_EVENTS}")
    wait(browser).until(lambda b: by_id(b, "method-name").text == LISTEN_EVENTS)
    form = by_id(browser, "request-form")
    form.find_element(By.CSS_SELECTOR, "details[data-path='filter'] > summary").click()
    since = form.find_element(By.NAME, "filter.since_time")
    since.send_keys("soon")
    assert browser.execute_script("return arguments[0].matches(':invalid')", since)
    since.clear()
    since.send_keys("1700000000")
    assert not browser.execute_script("return arguments[0].matches(':invalid')", since)


def test_copy_as_curl_and_grpcurl(browser, live_server):
    logged_in(browser, live_server, "#/explorer")
    select(browser, "cnct.kaas.api.Cluster.GetCluster")
    by_id(browser, "request-form").find_element(By.NAME, "name").send_keys("it's")
    by_id(browser, "copy-curl").click()
    wait(browser).until(lambda b: by_id(b, "command-text").get_attribute("data-kind") == "curl")
    words = shlex.split(by_id(browser, "command-text").text.replace("\\\n", " "))
    assert words[0] == "curl"
    assert f"{live_server.url}/cnct.kaas.api.Cluster/GetCluster" in words
    assert json.loads(words[words.index("--data-binary") + 1]) == {"name": "it's"}
    assert "Authorization: Bearer $PORTICO_TOKEN" in words  # no live token in a pasted command
    by_id(browser, "copy-grpcurl").click()
    wait(browser).until(lambda b: by_id(b, "command-text").get_attribute("data-kind") == "grpcurl")
    words = shlex.split(by_id(browser, "command-text").text.replace("\\\n", " "))
    assert words[0] == "grpcurl" and words[-1] == "cnct.kaas.api.Cluster/GetCluster"
    assert json.loads(words[words.index("-d") + 1]) == {"name": "it's"}
    # Where this server serves gRPC (a free port here), not the default 50051.
    assert words[-2] == f"127.0.0.1:{live_server.server.portico.grpc_port}"


def test_calls_join_the_history_and_open_again(browser, live_server):
    logged_in(browser, live_server, "#/explorer")
    select(browser, "cnct.kaas.api.Cluster.GetCluster")
    by_id(browser, "request-form").find_element(By.NAME, "name").send_keys("nope")
    call(browser, "error")
    go(browser, "#/history")
    wait(browser).until(
        lambda b: "cnct.kaas.api.Cluster.GetCluster" in texts(b, "table[aria-label='History'] a")
    )
    assert "404" in texts(browser, "table[aria-label='History'] td")
    css(browser, "table[aria-label='History'] a")[0].click()
    wait(browser).until(
        lambda b: by_id(b, "method-name").text == "cnct.kaas.api.Cluster.GetCluster"
    )
    assert json.loads(by_id(browser, "request").get_attribute("value")) == {"name": "nope"}


def test_the_history_keeps_no_password(browser, live_server):
    logged_in(browser, live_server, "#/explorer/services.auth.AuthService.Login")
    wait(browser).until(lambda b: by_id(b, "method-name").text == "services.auth.AuthService.Login")
    json_mode(browser)
    editor = by_id(browser, "request")
    editor.clear()
    editor.send_keys('{\n  "username": "admin",\n  "password": "admin-password"\n}')
    call(browser, "done")
    kept = browser.execute_script("return sessionStorage.getItem('portico.history')")
    assert "admin-password" not in kept
    assert json.loads(json.loads(kept)[0]["body"]) == {
        "username": "admin",
        "password": "(not kept)",
    }


def test_a_server_stream_shows_results_live_until_stopped(browser, live_server):
    logged_in(browser, live_server, "#/explorer")
    select(browser, LISTEN_EVENTS)
    assert by_id(browser, "method-kind").text == "server stream"
    by_id(browser, "call").click()
    stop = by_id(browser, "stop")
    wait(browser).until(visible.visibility_of(stop))
    server = live_server.server
    runtime = server.portico.servicers["v1alpha.PublicAPI"]
    wait(browser).until(lambda _: runtime.open_streams == 1)  # type: ignore[attr-defined]
    token = live_server.call(server.login())
    pod = live_server.call(start_instance(live_server, token, "web"))

    def event_ids(b: WebDriver) -> set[str]:
        shown = [json.loads(t) for t in texts(b, "#stream > li")]
        return {event["id"] for result in shown for event in result["events"]}

    wait(browser).until(lambda b: pod in event_ids(b))
    status = by_id(browser, "response-status")
    assert status.get_attribute("data-state") == "open"
    stop.click()
    wait(browser).until(lambda _: status.get_attribute("data-state") == "stopped")
    wait(browser).until(lambda _: runtime.open_streams == 0)  # type: ignore[attr-defined]


def test_a_server_stream_that_ends_says_so(browser, live_server):
    token = live_server.call(live_server.server.login())
    flavor = {"key": {"name": "x1.small"}, "ram": 1024, "vcpus": 1, "disk": 10}
    reply = live_server.call(
        live_server.server.http.post(
            "/create/flavor", json=flavor, headers={"authorization": f"Bearer {token}"}
        )
    )
    assert reply.status_code == 200, reply.text
    logged_in(browser, live_server, "#/explorer")
    select(browser, SHOW_FLAVOR)
    by_id(browser, "request-form").find_element(
        By.CSS_SELECTOR, "details[data-path='key'] > summary"
    ).click()
    by_id(browser, "request-form").find_element(By.NAME, "key.name").send_keys("x1.small")
    status = call(browser, "ended")
    assert "1 result" in status
    [shown] = texts(browser, "#stream > li")
    assert json.loads(shown)["key"] == {"name": "x1.small"}


def test_a_client_stream_sends_ndjson(browser, live_server):
    logged_in(browser, live_server, "#/explorer")
    select(browser, NODE_STATUS)
    assert "NDJSON" in by_id(browser, "request-label").text
    json_mode(browser)
    editor = by_id(browser, "request")
    editor.clear()
    editor.send_keys('{"id": ""}', Keys.ENTER, '{"id": ""}')
    call(browser, "error")
    assert by_id(browser, "error-code").text == "INVALID_ARGUMENT (3)"
    assert violations(browser) == ["id"]
