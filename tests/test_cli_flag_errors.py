"""A refused value names what the user typed: the flag when it came from the command line, the
variable when it came from the environment."""

from __future__ import annotations

import pytest

from app.cli.commands import main
from tests.test_cli_first_hour import portico


def _refusal(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> str:
    def started_anyway(settings: object) -> None:
        raise AssertionError(f"started with {settings}")

    monkeypatch.setattr("app.server.serving.serve", started_anyway)
    monkeypatch.setattr("app.proxy.run.proxy", started_anyway)
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    return str(stopped.value.code)


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["serve", "--http-port", "99999"], "portico: --http-port: 99999 is not allowed; "),
        (["serve", "--workers", "0"], "portico: --workers: 0 is not allowed; "),
        (
            ["proxy", "--upstream", "127.0.0.1:1", "--upstream-poll-seconds", "0"],
            "portico: --upstream-poll-seconds: 0.0 is not allowed; ",
        ),
    ],
)
def test_a_flag_refused_is_named_as_typed(argv, said, monkeypatch) -> None:
    refusal = _refusal(argv, monkeypatch)
    assert refusal.startswith(said), refusal
    assert "PORTICO_" not in refusal


def test_a_variable_refused_is_named_as_set(monkeypatch) -> None:
    monkeypatch.setenv("PORTICO_HTTP_PORT", "99999")
    refusal = _refusal(["serve"], monkeypatch)
    assert refusal.startswith("portico: PORTICO_HTTP_PORT: 99999 is not allowed; ")


def test_a_pair_names_the_flag_given_and_the_variable_missing(tmp_path, monkeypatch) -> None:
    cert = tmp_path / "cert.pem"
    cert.write_text("not read before its key is missed")
    refusal = _refusal(["serve", "--tls-cert", str(cert)], monkeypatch)
    assert "allowed: --tls-cert and PORTICO_TLS_KEY together" in refusal


def test_a_start_refused_after_the_settings_names_the_flag_too() -> None:
    # 192.0.2.1 (TEST-NET-1) is no address of this machine: the listener cannot bind it.
    result = portico("serve", "--http-host", "192.0.2.1", "--http-port", "0")
    assert result.returncode == 1
    assert result.stderr.startswith("portico: --http-host: cannot listen on '192.0.2.1'")
