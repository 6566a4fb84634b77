"""``portico users``: accounts made on the command line log in; disabled ones do not."""

from __future__ import annotations

import io
import logging

import pytest

from app.cli.commands import main
from tests.harness import run, running


@pytest.fixture
def cli(tmp_path, monkeypatch):
    monkeypatch.setenv("PORTICO_PASSWORD_HASH_COST", "16")

    def call(*args: str, stdin: str = "") -> None:
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
        main(["users", "--data-dir", str(tmp_path), *args])

    return call


def _login_status(tmp_path, username: str, password: str) -> int:
    async def scenario() -> int:
        async with running(tmp_path) as server:
            reply = await server.http.post(
                "/v1/auth:login", json={"username": username, "password": password}
            )
            return reply.status_code

    return run(scenario())


def test_added_account_logs_in_until_disabled(tmp_path, cli, capsys):
    cli("add", "alice", "--role", "viewer", "--password-stdin", stdin="alice-password\n")
    assert "added alice (viewer)" in capsys.readouterr().out
    assert _login_status(tmp_path, "alice", "alice-password") == 200
    cli("disable", "alice")
    assert _login_status(tmp_path, "alice", "alice-password") == 401
    cli("enable", "alice")
    cli("set-password", "alice", "--password-stdin", stdin="new-password\n")
    assert _login_status(tmp_path, "alice", "alice-password") == 401
    assert _login_status(tmp_path, "alice", "new-password") == 200
    capsys.readouterr()
    cli("list")
    assert capsys.readouterr().out.splitlines() == [
        "USERNAME\tROLE\tSTATE\tTENANT",
        "alice\tviewer\tenabled",
    ]


@pytest.mark.parametrize(
    ("args", "stdin", "message"),
    [
        (("add", "b!", "--role", "admin", "--password-stdin"), "good-pw\n", "must be 3-24"),
        (("add", "bob", "--role", "admin", "--password-stdin"), "short\n", "6-70 bytes"),
        (("add", "bob", "--role", "admin", "--password-stdin"), "", "no password given"),
        (("disable", "nobody"), "", "not found"),
    ],
)
def test_bad_requests_exit_with_a_message(cli, args, stdin, message):
    with pytest.raises(SystemExit) as stop:
        cli(*args, stdin=stdin)
    assert message in str(stop.value)


def test_the_same_name_twice_is_refused(cli):
    cli("add", "carol", "--role", "operator", "--password-stdin", stdin="carol-password\n")
    with pytest.raises(SystemExit, match="already exists"):
        cli("add", "carol", "--role", "operator", "--password-stdin", stdin="carol-password\n")


@pytest.mark.parametrize("action", [("add", "dave", "--role", "viewer"), ("set-password", "dave")])
def test_without_a_terminal_or_password_stdin_it_says_how_to_give_one(cli, action):
    # A script's stdin is no terminal: nothing is read from it unless --password-stdin says so.
    with pytest.raises(SystemExit) as stop:
        cli(*action, stdin="dave-password\n")
    message = str(stop.value)
    assert "no password given" in message
    assert f"| portico users {' '.join(action)} --password-stdin" in message


def test_account_changes_are_audit_lines_without_the_password(cli, caplog):
    # Run alone, the command sends them to stderr; here the test's logging keeps them.
    caplog.set_level(logging.INFO, logger="portico.audit")
    cli("add", "erin", "--role", "viewer", "--password-stdin", stdin="erin-password\n")
    cli("set-password", "erin", "--password-stdin", stdin="erin-new-password\n")
    cli("disable", "erin")
    cli("enable", "erin")
    audit = [r.getMessage() for r in caplog.records if r.name == "portico.audit"]
    assert audit == [
        "account added: user=erin role=viewer",
        "account password changed: user=erin",
        "account disabled: user=erin",
        "account enabled: user=erin",
    ]
    assert "erin-" not in caplog.text
