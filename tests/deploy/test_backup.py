"""``portico backup``: a copy of the SQLite database taken while the server runs, restored as
docs/operations/production.md says (the server stopped, the copy put in the database's place)
and read back through a server started on it."""

from __future__ import annotations

import io
import shutil
import stat
import sys
from pathlib import Path

import httpx
import pytest

from app.cli.commands import main
from tests.conftest import ROOT
from tests.serve_process import TEST_ENV, serve_process


def portico(
    capsys: pytest.CaptureFixture[str], *args: str, data_dir: Path, stdin: str = ""
) -> tuple[int, str, str]:
    """``portico ARGS --data-dir D`` in this process (each command's start would cost seconds
    here): its exit status, output and error output."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sys, "stdin", io.StringIO(stdin))
        patch.setenv("PORTICO_PASSWORD_HASH_COST", TEST_ENV["PORTICO_PASSWORD_HASH_COST"])
        try:
            main([*args, "--data-dir", str(data_dir)])
            status = 0
        except SystemExit as exc:
            status = 0 if exc.code is None else 1
            if isinstance(exc.code, str):
                print(exc.code, file=sys.stderr)
    out, err = capsys.readouterr()
    return status, out, err


def add_account(capsys: pytest.CaptureFixture[str], name: str, data_dir: Path) -> None:
    status, _, err = portico(
        capsys,
        "users",
        "add",
        name,
        "--role",
        "viewer",
        "--password-stdin",
        data_dir=data_dir,
        stdin=f"{name}-password\n",
    )
    assert status == 0, err


def logs_in(base: str, name: str) -> bool:
    reply = httpx.post(
        f"{base}/v1/auth:login", json={"username": name, "password": f"{name}-password"}
    )
    assert reply.status_code in {200, 401}, reply.text
    return reply.status_code == 200


@pytest.mark.slow
def test_an_online_backup_restores_what_was_there_when_it_was_taken(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, restored, copy = tmp_path / "data", tmp_path / "restored", tmp_path / "portico-copy.db"
    with serve_process([sys.executable], data, cwd=ROOT) as (served,):
        add_account(capsys, "before", data)
        status, out, err = portico(capsys, "backup", str(copy), data_dir=data)
        assert status == 0, err
        assert out.startswith(f"backed up {data / 'portico.db'} to {copy}: ")
        assert "schema version 3" in out and "checked" in out
        # The server kept serving meanwhile, and writes after the copy are not in it.
        assert logs_in(served.http_base, "before")
        add_account(capsys, "after", data)
    # One file, readable by its owner only (it holds password hashes), nothing beside it.
    assert stat.S_IMODE(copy.stat().st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", copy.name]
    restored.mkdir()
    shutil.copy(copy, restored / "portico.db")
    with serve_process([sys.executable], restored, cwd=ROOT) as (served,):
        assert logs_in(served.http_base, "before")
        assert not logs_in(served.http_base, "after")
        _, accounts, _ = portico(capsys, "users", "list", data_dir=restored)
        assert "before\tviewer" in accounts and "after" not in accounts


def test_a_backup_never_overwrites_and_names_pg_dump_for_postgresql(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    status, _, err = portico(capsys, "backup", str(tmp_path / "copy.db"), data_dir=data)
    assert status == 1 and f"no database at {data / 'portico.db'}" in err
    add_account(capsys, "someone", data)  # creates the database
    taken = tmp_path / "taken.db"
    taken.write_text("keep me")
    status, _, err = portico(capsys, "backup", str(taken), data_dir=data)
    assert status == 1 and "exists already" in err
    assert taken.read_text() == "keep me"
    monkeypatch.setenv("PORTICO_DATABASE_URL", "postgresql://portico:secret@db.example/portico")
    status, _, err = portico(capsys, "backup", str(tmp_path / "pg.db"), data_dir=data)
    assert status == 1 and "pg_dump" in err
    assert "secret" not in err  # the URL's password is never echoed
    assert not (tmp_path / "pg.db").exists()
