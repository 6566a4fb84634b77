"""The operations views in headless Chromium against a Portico seeded with ``--demo`` data:
each fills, changes live without a reload, offers its actions (with confirmation) and fits a
360 px screen. The docs' screenshots are made here: PORTICO_SCREENSHOTS=docs/screenshots."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support import expected_conditions as visible

from gen.scheduler import scheduler_pb2, scheduler_pb2_grpc
from tests.dashboard.conftest import LiveServer, live_portico
from tests.dashboard.pages import (
    by_id,
    click_first,
    css,
    go,
    horizontal_overflow,
    logged_in,
    row_keys,
    screenshot,
    start_instance,
    texts,
    wait,
)
from tests.services.kudo.world import bearer, headers

pytestmark = pytest.mark.chromium

WIDE = (1100, 720)  # the docs' screenshots: small files, still readable
NARROW = 360
VIEWS = ("#/kaas", "#/runtime", "#/edge", "#/storage", "#/explorer", "#/history")


@pytest.fixture(scope="module")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """Portico as ``portico serve --demo`` starts it, on a simulated clock fast enough to test."""
    with live_portico(tmp_path_factory.mktemp("demo"), demo=True, sim_step_seconds=0.02) as live:
        yield live


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("screenshots")


@pytest.fixture(autouse=True)
def wide_window(browser: WebDriver) -> None:
    browser.set_window_size(*WIDE)


def mark_page(browser: WebDriver) -> None:
    """Leave a mark in the page's memory: it survives anything but a reload."""
    browser.execute_script("window.notReloaded = true")


def not_reloaded(browser: WebDriver) -> bool:
    return bool(browser.execute_script("return window.notReloaded === true"))


def table_text(browser: WebDriver, label: str) -> str:
    return browser.execute_script(
        "const t = document.querySelector(`table[aria-label='${arguments[0]}']`);"
        "return t ? t.textContent : ''",
        label,
    )


def confirm(browser: WebDriver, answer: bool) -> None:
    dialog = by_id(browser, "dialog")
    wait(browser).until(visible.visibility_of(dialog))
    if answer:
        by_id(browser, "confirm").click()
    else:
        dialog.send_keys(Keys.ESCAPE)  # Esc cancels, as any dialog should
    wait(browser).until(lambda b: not by_id(b, "dialog").is_displayed())


def test_clusters_fill_from_demo_data_and_open_by_keyboard(browser, live_server, shots, tmp_path):
    logged_in(browser, live_server, "#/kaas")
    names = ["demo-degraded", "demo-provisioning", "demo-running", "demo-upgrading"]
    wait(browser).until(lambda b: row_keys(b, "Clusters") == names)
    wait(browser).until(lambda b: "DEGRADED" in table_text(b, "Clusters"))
    degraded = css(browser, "tr[data-key='demo-degraded'] .pill")[0]
    assert "bad" in degraded.get_attribute("class")  # status colours
    wait(browser).until(lambda b: "1.31.2" in table_text(b, "Clusters"))  # versions from nodes
    screenshot(browser, "clusters", shots)

    browser.execute_script("document.querySelector(\"tr[data-key='demo-running']\").focus()")
    browser.switch_to.active_element.send_keys(Keys.ENTER)  # a row opens from the keyboard
    wait(browser).until(lambda b: b.execute_script("return location.hash") == "#/kaas/demo-running")
    wait(browser).until(lambda b: len(row_keys(b, "Machines")) == 3)
    assert all(k.startswith("demo-running-") for k in row_keys(browser, "Machines"))
    button = by_id(browser, "kubeconfig")
    wait(browser).until(lambda _: button.is_enabled())
    browser.execute_cdp_cmd(
        "Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(tmp_path)}
    )
    button.click()
    saved = tmp_path / "demo-running.kubeconfig.yaml"
    wait(browser).until(lambda _: saved.exists() and saved.stat().st_size > 0)
    assert "kind: Config" in saved.read_text() and "server: https://" in saved.read_text()
    screenshot(browser, "cluster", shots)
    browser.back()
    wait(browser).until(lambda b: b.execute_script("return location.hash") == "#/kaas")


def test_a_cluster_made_with_the_form_then_scaled_upgraded_and_deleted_with_confirmation(
    browser, live_server
):
    logged_in(browser, live_server, "#/kaas")
    css(browser, "[data-action='cnct.kaas.api.Cluster.CreateCluster']")[0].click()
    dialog = by_id(browser, "dialog")
    wait(browser).until(visible.visibility_of(dialog))
    dialog.find_element(By.NAME, "name").send_keys("form-made")
    version = dialog.find_element(By.NAME, "k8s_version")
    version.send_keys("1.31.2")
    # The defaults offered: one control plane, one worker pool (nested message, repeated field).
    assert dialog.find_element(By.NAME, "control_plane_nodes.count").get_attribute("value") == "1"
    dialog.find_element(By.NAME, "worker_node_pools.0.name").send_keys("workers")
    count = dialog.find_element(By.NAME, "worker_node_pools.0.count")
    count.clear()
    count.send_keys("2")
    by_id(browser, "dialog-submit").click()
    wait(browser).until(lambda b: b.execute_script("return location.hash") == "#/kaas/form-made")
    wait(browser).until(lambda b: "RUNNING" in by_id(b, "view").text)
    wait(browser).until(lambda b: len(row_keys(b, "Machines")) == 3)  # 1 control plane + 2

    history = browser.execute_script("return JSON.parse(sessionStorage.getItem('portico.history'))")
    sent = json.loads(history[0]["body"])
    assert sent["name"] == "form-made" and sent["worker_node_pools"][0]["count"] == 2
    assert "labels" not in sent["worker_node_pools"][0]  # untouched: not sent

    css(browser, "[data-action='cnct.kaas.api.Cluster.ScaleNodePool']")[0].click()
    dialog = by_id(browser, "dialog")
    wait(browser).until(visible.visibility_of(dialog))
    assert dialog.find_element(By.NAME, "node_pools.0.name").get_attribute("value") == "workers"
    count = dialog.find_element(By.NAME, "node_pools.0.count")
    count.clear()
    count.send_keys("3")
    by_id(browser, "dialog-submit").click()
    wait(browser).until(lambda b: len(row_keys(b, "Machines")) == 4)

    # Upgrade offers the newer version and asks first; confirmed, every machine moves to it.
    css(browser, "[data-action='cnct.kaas.api.Cluster.UpgradeCluster']")[0].click()
    wait(browser).until(lambda b: "1.32.0" in by_id(b, "dialog").text)
    confirm(browser, True)
    wait(browser).until(lambda b: "1.31.2" not in table_text(b, "Machines"))
    assert "1.32.0" in table_text(browser, "Machines")

    delete = css(browser, "[data-action='cnct.kaas.api.Cluster.DeleteCluster']")[0]
    delete.click()
    confirm(browser, False)
    assert browser.execute_script("return location.hash") == "#/kaas/form-made"  # nothing done
    delete.click()
    confirm(browser, True)
    wait(browser).until(lambda b: b.execute_script("return location.hash") == "#/kaas")
    wait(browser).until(lambda b: "form-made" not in row_keys(b, "Clusters"))


def test_runtime_fills_and_a_new_pod_appears_live(browser, live_server, shots):
    logged_in(browser, live_server, "#/runtime")
    wait(browser).until(lambda b: len(row_keys(b, "Pods")) == 2)
    assert {"demo-web", "demo-cache"} <= set(texts(browser, "table[aria-label='Pods'] td"))
    wait(browser).until(lambda b: by_id(b, "events").find_elements(By.TAG_NAME, "li"))
    badge = css(browser, "#view .live-badge")[0]
    wait(browser).until(lambda _: badge.get_attribute("data-state") == "live")
    # Times read in local time; the raw value is on hover.
    raw, shown = browser.execute_script(
        "const t = document.querySelector(\"table[aria-label='Pods'] time\");"
        "return [t.title, t.textContent]"
    )
    assert raw.isdigit() and shown != raw
    screenshot(browser, "runtime", shots)

    mark_page(browser)
    token = live_server.call(live_server.server.login())
    pod = live_server.call(start_instance(live_server, token, "live-one"))
    wait(browser).until(lambda b: pod in row_keys(b, "Pods"))
    wait(browser).until(lambda b: css(b, f"#events li[data-id='{pod}']"))
    assert not_reloaded(browser)


def test_a_dropped_stream_reconnects_and_resumes(browser, live_server):
    logged_in(browser, live_server, "#/runtime")
    runtime = live_server.server.portico.servicers["v1alpha.PublicAPI"]
    badge = css(browser, "#view .live-badge")[0]
    wait(browser).until(lambda _: badge.get_attribute("data-state") == "live")
    before = len(css(browser, "#events li"))
    mark_page(browser)
    browser.execute_script("window.dispatchEvent(new Event('offline'))")  # the network drops
    wait(browser).until(
        lambda _: badge.get_attribute("data-state") in ("reconnecting", "connecting")
    )
    wait(browser).until(lambda _: badge.get_attribute("data-state") == "live")
    assert runtime.open_streams >= 1  # type: ignore[attr-defined]
    # Resumed from the last event: nothing shown twice, and what happens next arrives.
    assert len(css(browser, "#events li")) == before
    token = live_server.call(live_server.server.login())
    pod = live_server.call(start_instance(live_server, token, "after-drop"))
    wait(browser).until(lambda b: css(b, f"#events li[data-id='{pod}']"))
    keys = browser.execute_script(
        "return [...document.querySelectorAll('#events li')].map((li) => li.textContent)"
    )
    assert len(keys) == len(set(keys))
    assert not_reloaded(browser)


async def stop_instance(live: LiveServer, instance_id: str) -> None:
    token = await live.server.login()
    stub = scheduler_pb2_grpc.InstanceServiceStub(live.server.channel)
    await stub.Stop(scheduler_pb2.InstanceIdentifier(id=instance_id), metadata=bearer(token))


def test_a_pod_page_follows_its_logs_across_a_drop(browser, live_server, shots):
    logged_in(browser, live_server, "#/runtime")
    wait(browser).until(lambda b: len(row_keys(b, "Pods")) >= 2)
    click_first(browser, "table[aria-label='Pods'] tbody tr a")
    wait(browser).until(
        lambda b: b.execute_script("return location.hash").startswith("#/runtime/pod/")
    )
    wait(browser).until(lambda b: by_id(b, "logs").text.strip())
    badge = css(browser, "#view .live-badge")[0]
    wait(browser).until(lambda _: badge.get_attribute("data-state") == "live")  # following
    screenshot(browser, "pod", shots)

    # The log stream drops and comes back (every state it passes through is recorded, so no
    # moment has to be caught), resumes without repeating a line, and follows what comes next.
    browser.execute_script(
        "const badge = arguments[0]; window.logStates = [];"
        "new MutationObserver(() => window.logStates.push(badge.dataset.state))"
        ".observe(badge, { attributes: true, attributeFilter: ['data-state'] });"
        "window.dispatchEvent(new Event('offline'))",
        badge,
    )
    wait(browser).until(
        lambda b: b.execute_script("return window.logStates.slice(-1)[0] === 'live'")
    )
    assert "reconnecting" in browser.execute_script("return window.logStates")
    pod = browser.execute_script("return location.hash").rsplit("/", 1)[1]
    live_server.call(stop_instance(live_server, pod))
    wait(browser).until(lambda b: "container exited with code 0" in by_id(b, "logs").text)
    lines = by_id(browser, "logs").text.splitlines()
    assert len(lines) == len(set(lines)), lines


def test_edge_fills_and_a_delete_shows_its_progress_live(browser, live_server, shots):
    logged_in(browser, live_server, "#/edge")
    wait(browser).until(lambda b: "demo-cloudlet" in table_text(b, "Cloudlets"))
    wait(browser).until(lambda b: "READY" in table_text(b, "Cloudlets"))
    assert "demo-cluster" in table_text(browser, "Cluster instances")
    wait(browser).until(lambda b: len(row_keys(b, "App instances")) == 1)
    assert "Demo Games" in table_text(browser, "Developers")
    screenshot(browser, "edge", shots)

    go(browser, "#/edge/developer/Demo%20Games")
    wait(browser).until(lambda b: css(b, "svg.graph g.node"))
    labels = texts(browser, "svg.graph g.node title")
    for name in (
        "Demo Games",
        "demo-app 1.0",
        "demo-cluster (READY)",
        "demo-cloudlet",
        "Demo Telecom",
    ):
        assert any(label.startswith(name) for label in labels), (name, labels)
    assert len(css(browser, "svg.graph path.edge")) >= 5
    screenshot(browser, "developer", shots)

    browser.back()
    wait(browser).until(lambda b: len(row_keys(b, "App instances")) == 1)
    mark_page(browser)
    css(browser, "[data-action='edgeproto.AppInstApi.DeleteAppInst']")[0].click()
    confirm(browser, True)
    entry = "#progress .progress-entry"
    wait(browser).until(lambda b: css(b, f"{entry} li"))  # progress messages as they come
    wait(browser).until(lambda b: css(b, entry)[0].get_attribute("data-state") == "done")
    wait(browser).until(lambda b: row_keys(b, "App instances") == [])

    # Made again from the form (its keys offered from what exists), its progress live too.
    css(browser, "[data-action='edgeproto.AppInstApi.CreateAppInst']")[0].click()
    dialog = by_id(browser, "dialog")
    wait(browser).until(visible.visibility_of(dialog))
    assert dialog.find_element(By.NAME, "key.app_key.name").get_attribute("value") == "demo-app"
    assert (
        dialog.find_element(By.NAME, "key.cluster_inst_key.cluster_key.name").get_attribute("value")
        == "demo-cluster"
    )
    by_id(browser, "dialog-submit").click()
    wait(browser).until(lambda b: len(css(b, entry)) == 2)
    wait(browser).until(lambda b: css(b, entry)[0].get_attribute("data-state") == "done")
    wait(browser).until(lambda b: len(row_keys(b, "App instances")) == 1)
    assert not_reloaded(browser)


def test_a_tenant_bound_account_sees_its_tenant(browser, live_server):
    """An account acting for one edge organisation sees that organisation's objects, the page
    says which, and it offers no action on what the organisation may only read."""
    for name, binding in (
        ("acme-dev", {"developer": "acme"}),
        ("telco", {"operator": "Demo Telecom"}),
    ):
        live_server.call(live_server.server.add_account(name, "operator", "password1", **binding))

    logged_in(browser, live_server, "#/edge", "acme-dev", "password1")
    assert by_id(browser, "role").text == "operator · developer acme"
    wait(browser).until(lambda b: "demo-cloudlet" in table_text(b, "Cloudlets"))  # shared, read
    assert row_keys(browser, "App instances") == [] and row_keys(browser, "Developers") == []
    assert "Demo Games" not in table_text(browser, "Cluster instances")

    logged_in(browser, live_server, "#/edge", "telco", "password1")
    assert by_id(browser, "role").text == "operator · operator Demo Telecom"
    # The instances on its cloudlet, read-only: no create, no delete.
    wait(browser).until(lambda b: "Demo Games" in table_text(b, "App instances"))
    assert "demo-cluster" in table_text(browser, "Cluster instances")
    assert row_keys(browser, "Developers") == []
    offered = "return [...document.querySelectorAll('[data-action]')].map((e) => e.dataset.action)"
    assert browser.execute_script(offered) == []


def test_storage_shows_health_capacity_and_io_over_time(browser, live_server, shots):
    logged_in(browser, live_server, "#/storage")
    wait(browser).until(lambda b: len(row_keys(b, "Storage nodes")) == 4)
    used = browser.execute_script("return document.querySelector('#view meter').value")
    assert 0 < used < 100

    def samples(b: WebDriver) -> int:
        # One script: the chart is redrawn on every refresh, so held elements go stale.
        return b.execute_script(
            "const counts = [...document.querySelectorAll('#io-chart polyline')]"
            ".map((p) => Number(p.dataset.count));"
            "return counts.length ? Math.min(...counts) : 0"
        )

    async def reported_health() -> str:
        token = await live_server.server.login()
        reply = await live_server.server.http.get("/v1/stats/cluster", headers=headers(token))
        return reply.json()["stats"]["status"]

    def shows_the_reported_health(b: WebDriver) -> bool:
        # The simulated cluster has outages on its own clock (WARN about 5 % of the time), so
        # the page is refreshed between two readings of the API; when they agree, so must it.
        before = live_server.call(reported_health())
        drawn = samples(b)
        by_id(b, "refresh").click()
        wait(b).until(lambda b: samples(b) > drawn)  # the chart grows with each refresh
        after = live_server.call(reported_health())
        if before != after:
            return False  # it changed during the refresh: look again
        assert texts(b, "#view .facts .pill[data-status^='HEALTH_']") == [
            before.removeprefix("HEALTH_")
        ]
        return True

    wait(browser).until(lambda b: samples(b) >= 1)
    wait(browser).until(shows_the_reported_health)
    screenshot(browser, "storage", shots)


def test_the_explorer_and_the_history(browser, live_server, shots):
    logged_in(browser, live_server, "#/explorer/cnct.kaas.api.Cluster.GetCluster")
    wait(browser).until(
        lambda b: by_id(b, "method-name").text == "cnct.kaas.api.Cluster.GetCluster"
    )
    by_id(browser, "request-form").find_element(By.NAME, "name").send_keys("demo-running")
    by_id(browser, "call").click()
    wait(browser).until(lambda b: by_id(b, "response-status").get_attribute("data-state") == "done")
    assert json.loads(by_id(browser, "response-body").text)["cluster"]["status"] == "RUNNING"
    browser.execute_script("window.scrollTo(0, 0)")
    screenshot(browser, "explorer", shots)
    go(browser, "#/history")
    wait(browser).until(lambda b: row_keys(b, "History"))
    assert "cnct.kaas.api.Cluster.GetCluster" in texts(browser, "table[aria-label='History'] a")
    screenshot(browser, "history", shots)


def test_the_keyboard_alone_moves_between_views(browser, live_server):
    logged_in(browser, live_server, "#/kaas")
    wait(browser).until(lambda b: row_keys(b, "Clusters"))
    # Focus starts on the view's heading; Shift+Tab goes back up to the views' links.
    wait(browser).until(
        lambda b: b.execute_script("return document.activeElement.textContent") == "KaaS clusters"
    )
    for _ in range(12):
        browser.switch_to.active_element.send_keys(Keys.SHIFT, Keys.TAB)
        if browser.switch_to.active_element.get_attribute("data-view") == "storage":
            break
    browser.switch_to.active_element.send_keys(Keys.ENTER)
    # Focus follows to the new view's heading. The hash changes as the link is followed, a
    # moment before the hashchange event renders the view, so what has focus is read in one
    # step once it is there: the link that had it is replaced by then (a stale element).
    wait(browser).until(
        lambda b: (
            b.execute_script("return [location.hash, document.activeElement.textContent]")
            == ["#/storage", "Storage"]
        )
    )


# On a phone every table row is a card: nothing scrolls sideways inside a table, and the
# names in its cells stay whole (one line each), not broken mid-word to fit a column.
TABLES_UNCUT = """
const broken = [];
for (const wrap of document.querySelectorAll('#view .table-wrap')) {
  const text = wrap.textContent.slice(0, 40);
  if (wrap.scrollWidth > wrap.clientWidth + 1) broken.push('scrolls: ' + text);
}
for (const td of document.querySelectorAll('#view .table-wrap td')) {
  for (const node of td.childNodes) {
    const name = node.textContent.trim();
    if (node.nodeType !== Node.TEXT_NODE || !/^[\\w.-]{1,24}$/.test(name)) continue;
    const range = document.createRange();
    range.selectNodeContents(node);
    if (range.getClientRects().length > 1) broken.push('broken: ' + node.textContent);
  }
}
return broken;
"""


def test_tables_are_cards_on_a_phone(browser, live_server):
    logged_in(browser, live_server, "#/kaas")
    browser.set_window_size(NARROW, 780)
    for view, table in (("#/kaas", "Clusters"), ("#/runtime", "Pods"), ("#/edge", "Cloudlets")):
        go(browser, view)
        wait(browser).until(lambda b, t=table: row_keys(b, t))
        assert browser.execute_script(TABLES_UNCUT) == [], view
        # Each cell says its column, as the header row would.
        label = browser.execute_script(
            "const td = document.querySelector(`#view table[aria-label='${arguments[0]}'] td`);"
            "return getComputedStyle(td, '::before').content",
            table,
        )
        assert label not in ("none", "normal", '""'), (view, label)


def test_every_view_fits_a_360_px_screen(browser, live_server, shots):
    logged_in(browser, live_server, "#/kaas")
    browser.set_window_size(NARROW, 780)
    width = browser.execute_script("return document.documentElement.clientWidth")
    assert width <= NARROW
    for view in VIEWS:
        go(browser, view)
        wait(browser).until(lambda b, v=view: b.execute_script("return location.hash") == v)
        wait(browser).until(
            lambda b: b.find_elements(By.CSS_SELECTOR, "#view .view-head, #method-list a")
        )
        assert horizontal_overflow(browser) == 0, view
        # Nothing drawn past the right edge either (a wide child of a clipped box).
        wide = browser.execute_script(
            "const w = document.documentElement.clientWidth;"
            "return [...document.querySelectorAll('body *')].filter((e) => {"
            "  if (!e.offsetParent || e.closest('.table-wrap, .graph-wrap, pre')) return false;"
            "  const r = e.getBoundingClientRect(); return r.width > 0 && r.right > w + 1;"
            "}).map((e) => e.tagName + '#' + e.id + '.' + e.className).slice(0, 5)"
        )
        assert wide == [], (view, wide)
    go(browser, "#/runtime")
    wait(browser).until(lambda b: len(row_keys(b, "Pods")) >= 2)
    screenshot(browser, "narrow-runtime", shots)


def test_a_phone_keeps_the_screen_for_the_view_and_every_control_says_what_it_does(
    browser, live_server
):
    logged_in(browser, live_server, "#/kaas")
    browser.set_window_size(NARROW, 740)
    # The bar: a short strip (it took 150 px), with every view's link in sight.
    bar, links, width = browser.execute_script(
        "const bar = document.querySelector('header.bar').getBoundingClientRect();"
        "const links = [...document.querySelectorAll('#nav a')].map((a) => {"
        "  const r = a.getBoundingClientRect();"
        "  return r.right <= innerWidth && r.bottom <= bar.bottom; });"
        "return [bar.height, links, innerWidth]"
    )
    assert width <= NARROW and bar <= 100 and links and all(links), (bar, links)

    # The explorer's title breaks after a dot of the name, never inside a word.
    go(browser, "#/explorer/cnct.kaas.api.Cluster.CreateCluster")
    wait(browser).until(
        lambda b: (
            by_id(b, "method-name").text.replace("\n", "") == "cnct.kaas.api.Cluster.CreateCluster"
        )
    )
    lines = browser.execute_script(
        "const h = document.getElementById('method-name');"
        "const walker = document.createTreeWalker(h, NodeFilter.SHOW_TEXT);"
        "const split = [];"
        "for (let n = walker.nextNode(); n; n = walker.nextNode()) {"
        "  const at = n.textContent.search(/\\w+\\.?$/);"  # the word, without the dot before it
        "  const range = document.createRange(); range.setStart(n, at); range.setEnd(n, n.length);"
        "  const tops = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));"
        "  if (tops.size > 1) split.push(n.textContent);"
        "}"
        "return [split, h.getClientRects()[0].height > 30]"
    )
    assert lines == [[], True], lines  # wrapped (it is longer than the screen), no word split

    # The edge cards: each line says what it is, the delete buttons which instance they delete.
    go(browser, "#/edge")
    wait(browser).until(lambda b: row_keys(b, "App instances"))
    unlabelled = browser.execute_script(
        "return [...document.querySelectorAll('#view .table-wrap tr[data-key] td')]"
        ".filter((td) => !td.dataset.label).map((td) => td.textContent)"
    )
    assert unlabelled == []
    deletes = [b.get_attribute("aria-label") for b in css(browser, "#view button.danger")]
    assert deletes and all(
        d.startswith(("Delete cluster instance ", "Delete app instance ")) for d in deletes
    ), deletes

    # The storage chart's axis labels are drawn at their own size, not shrunk to fit.
    go(browser, "#/storage")
    wait(browser).until(lambda b: css(b, "#io-chart text.axis"))
    sizes = browser.execute_script(
        "return [...document.querySelectorAll('#io-chart text.axis')]"
        ".map((t) => parseFloat(getComputedStyle(t).fontSize) * t.getScreenCTM().a)"
    )
    assert sizes and min(sizes) >= 11, sizes
