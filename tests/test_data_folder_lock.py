"""One server per data folder: a second ``portico serve`` on a folder in use stops at once with
one line naming the server that holds it (it would otherwise share the database, the secret and
the simulation with it, unseen), while the workers of one server share their folder, and a
server that was killed leaves nothing that blocks the next start."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.serve_process import START_LINE, TEST_ENV, Workers, serve_process
from tests.test_cli_first_hour import PORTICO, portico

pytestmark = pytest.mark.slow  # servers as processes: scheduled first (tests/conftest.py)


def test_a_second_server_on_a_folder_in_use_is_refused_with_one_line(two_workers: Workers):
    # The running server's two workers share the folder; its supervisor holds the lock.
    holder = (two_workers.data_dir / "serve.lock").read_text().strip()
    second = portico(
        "serve", "--data-dir", str(two_workers.data_dir), "--http-port", "0", "--grpc-port", "0"
    )
    assert second.returncode == 1
    assert second.stderr == (
        f"portico: the data folder {two_workers.data_dir} is in use by the server with process "
        f"id {holder}; stop it, or give this server a folder of its own (--data-dir)\n"
    )
    assert len(two_workers.served) == 2


def test_a_killed_server_does_not_keep_its_folder_from_the_next(tmp_path: Path):
    data = tmp_path / "data"
    first = subprocess.Popen(
        [PORTICO, "serve", "--data-dir", str(data), "--http-port", "0", "--grpc-port", "0"],
        env={**os.environ, **TEST_ENV},
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert first.stderr is not None
        for line in first.stderr:  # until it serves: it holds the folder then
            if START_LINE.search(line):
                break
        else:
            pytest.fail("the first server never started")
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
        if first.stderr is not None:
            first.stderr.close()
    assert (data / "serve.lock").read_text().strip() == str(first.pid)  # left behind
    with serve_process([sys.executable], data, cwd=ROOT) as [served]:
        assert served.http_base
    assert (data / "serve.lock").exists()
