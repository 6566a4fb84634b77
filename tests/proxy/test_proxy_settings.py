"""Every setting of ``portico proxy`` is checked at start: one line naming it, nothing started."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from app.cli.commands import main
from tests.proxy.processes import descriptor_set, free_port, start_proxy


def _started_anyway(main: object) -> None:
    raise AssertionError("the proxy started")


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "garbage.binpb").write_bytes(b"\xff\xff\xff\xff")
    (tmp_path / "empty.binpb").write_bytes(b"")
    (tmp_path / "not-pem.crt").write_text("not a certificate\n")
    return {
        "set": str(descriptor_set(tmp_path)),
        "garbage": str(tmp_path / "garbage.binpb"),
        "empty": str(tmp_path / "empty.binpb"),
        "not_pem": str(tmp_path / "not-pem.crt"),
    }


@pytest.mark.parametrize(
    # A value given as a flag is refused naming the flag; one from the environment, the variable.
    ("flags", "variable", "allowed"),
    [
        ([], "PORTICO_UPSTREAMS", "one or more host:port"),
        (["--upstream", "nohost"], "--upstream", "host:port gRPC servers"),
        (["--upstream", "a:99999"], "--upstream", "host:port gRPC servers"),
        (
            ["--upstream", "a:1", "--upstream-poll-seconds", "0"],
            "--upstream-poll-seconds",
            "0.1",
        ),
        (
            ["--upstream", "a:1", "--descriptor-set", "/nonexistent"],
            "--descriptor-set",
            "readable",
        ),
        (
            ["--upstream", "a:1", "--descriptor-set", "{garbage}"],
            "--descriptor-set",
            "not a FileDescriptorSet",
        ),
        (
            ["--upstream", "a:1", "--descriptor-set", "{empty}"],
            "--descriptor-set",
            "declares no service",
        ),
        (
            ["--upstream", "a:1", "--upstream", "b:2", "--descriptor-set", "{set}"],
            "--descriptor-set",
            "exactly one upstream",
        ),
        (["--upstream", "a:1", "--upstream-cert", "{not_pem}"], "PORTICO_UPSTREAM_KEY", "together"),
        (["--upstream", "a:1", "--upstream-ca", "{not_pem}"], "--upstream-ca", "PEM CA"),
        (
            ["--upstream", "a:1", "--upstream-cert", "{not_pem}", "--upstream-key", "{not_pem}"],
            "--upstream-cert",
            "needs TLS",
        ),
    ],
)
def test_a_bad_proxy_setting_stops_the_start_with_one_line(
    monkeypatch: pytest.MonkeyPatch,
    files: dict[str, str],
    flags: list[str],
    variable: str,
    allowed: str,
) -> None:
    monkeypatch.delenv("PORTICO_UPSTREAMS", raising=False)
    monkeypatch.setattr("app.server.on_uvicorn.serve.run_event_loop", _started_anyway)
    with pytest.raises(SystemExit) as stopped:
        main(["proxy", *(flag.format(**files) for flag in flags)])
    message = str(stopped.value.code)
    assert message.startswith(f"portico: {variable}: "), message
    assert allowed in message
    assert "\n" not in message


@pytest.mark.parametrize("server", ["uvicorn", "pyvoy"])
def test_workers_out_of_range_are_refused(monkeypatch: pytest.MonkeyPatch, server: str) -> None:
    monkeypatch.setattr("app.server.on_uvicorn.serve.run_event_loop", _started_anyway)
    with pytest.raises(SystemExit) as stopped:
        main(["proxy", "--upstream", "a:1", "--workers", "0", "--server", server])
    assert str(stopped.value.code).startswith("portico: --workers: 0 is not allowed")


def test_a_metrics_port_serves_the_proxys_metrics_there_and_not_beside_the_api() -> None:
    """PORTICO_METRICS_PORT holds for the proxy as for serve: it had been ignored, /metrics
    answered on the API's port, open to every caller of the API."""
    metrics_port = free_port()
    env = {"PORTICO_METRICS_PORT": str(metrics_port), "PORTICO_METRICS_TOKEN": TOKEN}
    upstream = f"127.0.0.1:{free_port()}"  # nobody: the proxy serves without its upstream
    proxy, base = start_proxy("--upstream", upstream, "--auth", "none", ready=False, env=env)
    try:
        assert httpx.get(f"{base}/metrics").status_code == 404
        scrape = httpx.get(
            f"http://127.0.0.1:{metrics_port}/metrics",
            headers={"authorization": f"Bearer {TOKEN}"},
        )
        assert scrape.status_code == 200
        assert "portico_requests_total" in scrape.text
    finally:
        proxy.stop()


TOKEN = "a-metrics-token-of-some-length"
