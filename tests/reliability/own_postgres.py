"""A PostgreSQL server a test owns, to stop, restart and start again under a running Portico.

The shared server of ``PORTICO_TEST_DATABASE_URL`` serves every other PostgreSQL test at once, so
no test may take it down; this one is the test's own: Debian's binaries (``initdb``, ``pg_ctl``)
on a cluster in a folder of its own, on a free loopback port, its socket in that folder.
PostgreSQL refuses to run as root, so as root it runs as the ``postgres`` user. Without the
binaries a test skips (fails under ``CI=true``, as the other PostgreSQL tests do).
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from tests.conftest import require
from tests.reliability.server import free_port

USER = "portico"
DATABASE = "portico"
# Bounds on the server's own steps; each takes about a second.
PG_CTL_TIMEOUT = 60


def binaries() -> Path | None:
    """The newest Debian PostgreSQL's bin folder, if one is installed."""
    found = glob.glob("/usr/lib/postgresql/*/bin/pg_ctl")
    if not found:
        return None
    newest = max(found, key=lambda path: int(Path(path).parts[-3].split(".")[0]))
    return Path(newest).parent


class OwnPostgres:
    """A PostgreSQL cluster in ``folder``, listening on 127.0.0.1:``port`` only."""

    def __init__(self, bin_dir: Path, folder: Path, port: int) -> None:
        self.bin_dir = bin_dir
        self.folder = folder
        self.port = port
        self.data = folder / "data"
        # As root, every step runs as postgres (which owns the folder).
        self._as = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []

    def url(self, database: str = DATABASE) -> str:
        return f"postgresql://{USER}@127.0.0.1:{self.port}/{database}"

    def _run(self, *command: str) -> None:
        # Output to a file, not a pipe: the server pg_ctl starts would hold a pipe open.
        with open(self.folder / "commands.log", "ab") as output:
            subprocess.run(
                [*self._as, *command],
                check=True,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                timeout=PG_CTL_TIMEOUT,
                cwd=self.folder,
            )

    def initialise(self) -> None:
        self._run(
            str(self.bin_dir / "initdb"),
            "-D", str(self.data), "-U", USER, "-A", "trust", "-E", "UTF8", "--no-sync",
        )  # fmt: skip
        self.start()
        self.create_database(DATABASE)

    def create_database(self, name: str) -> str:
        """A new empty database; its URL."""
        self._run(
            str(self.bin_dir / "createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", USER,
            name,
        )  # fmt: skip
        return self.url(name)

    def start(self) -> None:
        """Start it and wait until it accepts connections."""
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.folder} "
            # A test's data: durability is not what is tested here, speed is welcome.
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        )
        self._pg_ctl("start", "-w", "-l", str(self.folder / "server.log"), "-o", options)

    def stop(self) -> None:
        """Stop it as an operator would for maintenance: connections are ended at once."""
        self._pg_ctl("stop", "-w", "-m", "fast")

    def restart(self) -> None:
        """``pg_ctl restart -m fast``: every connection ended, the server back in a second."""
        self._pg_ctl("restart", "-w", "-m", "fast", "-l", str(self.folder / "server.log"))

    def start_again(self) -> None:
        """Start it unless it runs (a test that stopped it leaves it running for the next)."""
        status = subprocess.run(
            [*self._as, str(self.bin_dir / "pg_ctl"), "-D", str(self.data), "status"],
            capture_output=True,
            timeout=PG_CTL_TIMEOUT,
            cwd=self.folder,
        )
        if status.returncode != 0:
            self.start()

    def _pg_ctl(self, *args: str) -> None:
        self._run(str(self.bin_dir / "pg_ctl"), "-D", str(self.data), *args)

    def stop_quietly(self) -> None:
        with contextlib.suppress(subprocess.SubprocessError, OSError):
            self._pg_ctl("stop", "-w", "-m", "immediate")


@contextlib.contextmanager
def own_postgres() -> Iterator[OwnPostgres]:
    """A fresh, running PostgreSQL of the caller's own, removed afterwards."""
    bin_dir = binaries()
    if bin_dir is None:
        require("PostgreSQL's server binaries", "no /usr/lib/postgresql/*/bin/pg_ctl (Debian's)")
    assert bin_dir is not None
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        require("runuser", "PostgreSQL refuses to run as root; runuser runs it as postgres")
    # Not under pytest's tmp_path: root's is closed to the postgres user.
    folder = Path(tempfile.mkdtemp(prefix="portico-own-postgres-"))
    if os.geteuid() == 0:
        account = pwd.getpwnam("postgres")
        os.chown(folder, account.pw_uid, account.pw_gid)
    server = OwnPostgres(bin_dir, folder, free_port())
    try:
        server.initialise()
        yield server
    finally:
        server.stop_quietly()
        shutil.rmtree(folder, ignore_errors=True)
