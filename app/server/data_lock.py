"""One ``portico serve`` per data folder: a second one on the same folder is refused.

Two servers on one folder would share its SQLite database, its JWT secret and its metrics
folder while each believed it was alone (the simulation run twice, each one's leader election
on its own workers). The server that starts first holds an exclusive ``flock`` on
``DATA_DIR/serve.lock`` for as long as it runs; its workers (and pyvoy's Envoy processes) are
its children and need no lock of their own. The kernel drops the lock with the process, so a
server that was killed leaves a file no one holds, and the next start takes it over. The file
names the holder's process id, for the refusal to say which server it is.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from app.settings.config import ConfigurationError
from app.store import make_private_folder

LOCK_FILE = "serve.lock"


class DataFolderInUse(ConfigurationError):
    """Another server runs on this data folder; the message names it."""

    def __init__(self, folder: Path, holder: str) -> None:
        who = f"the server with process id {holder}" if holder else "another server"
        shown = folder if folder.is_absolute() or str(folder).startswith(".") else f"./{folder}"
        super().__init__(
            f"the data folder {shown} is in use by {who}; stop it, or give this server a "
            "folder of its own (--data-dir)"
        )


@contextlib.contextmanager
def data_folder_held(folder: Path) -> Iterator[None]:
    """Hold ``folder``'s lock until the block ends; DataFolderInUse if another server does."""
    try:
        make_private_folder(folder)
        descriptor = os.open(folder / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise ConfigurationError(
            f"PORTICO_DATA_DIR: cannot use {folder} ({exc.strerror}); allowed: a folder this "
            "user may create and write in"
        ) from None
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(descriptor, 32, 0).decode(errors="replace").strip()
            raise DataFolderInUse(folder, holder if holder.isdigit() else "") from None
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(descriptor)  # releases the lock; the file stays, held by no one
