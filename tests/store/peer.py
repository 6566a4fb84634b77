"""A second Portico-like process on the same database, for the crash and multi-process tests.

Run as ``python -m tests.store.peer URL COMMAND ...``; it reports on stdout, one line per fact:

- ``write KIND KEY``: create one object, print its revision, exit.
- ``write-loop``: forever, create cluster ``c<i>`` with machines ``c<i>/m0..m2`` in one
  transaction and print ``i`` once it is committed (acknowledged).
- ``lead``: campaign for leadership, print ``leader`` once elected, then keep running.
- ``watch KIND``: print ``ready``, then ``<type> <key>`` for every new event of KIND.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path

from app.store import LeaderElection, ObjectStore

ROOT = Path(__file__).resolve().parents[2]
MACHINES_PER_CLUSTER = 3


def say(line: str) -> None:
    print(line, flush=True)


async def write_one(store: ObjectStore, kind: str, key: str) -> None:
    record = await store.create(kind, key, key.encode())
    say(str(record.revision))


async def write_loop(store: ObjectStore) -> None:
    for i in range(1_000_000):
        async with store.transaction() as tx:
            await tx.create("Cluster", f"c{i}", f"cluster {i}".encode())
            for m in range(MACHINES_PER_CLUSTER):
                await tx.create("Machine", f"c{i}/m{m}", f"machine {m} of {i}".encode())
        say(str(i))


async def lead(store: ObjectStore) -> None:
    election = LeaderElection(store, retry_interval=0.2)
    campaign = asyncio.create_task(election.run())
    await election.wait_elected()
    say("leader")
    await campaign


async def watch(store: ObjectStore, kind: str) -> None:
    events = store.watch([kind], await store.current_revision())
    say("ready")
    async for event in events:
        say(f"{event.type} {event.key}")


async def main(url: str, command: str, *args: str) -> None:
    async with ObjectStore.open(url, poll_interval=0.1) as store:
        if command == "write":
            await write_one(store, *args)
        elif command == "write-loop":
            await write_loop(store)
        elif command == "lead":
            await lead(store)
        elif command == "watch":
            await watch(store, *args)
        else:
            raise SystemExit(f"unknown command {command!r}")


class Peer:
    """A running peer process whose output lines can be awaited."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    @classmethod
    def start(cls, url: str, *command: str) -> Peer:
        """Start ``python -m tests.store.peer url command...`` from the repository root."""
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.store.peer", url, *command],
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            text=True,
        )
        return cls(process)

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            # A line cut short by SIGKILL has no newline: it was never fully reported.
            if line.endswith("\n"):
                self._lines.put(line.rstrip("\n"))
        self._lines.put(None)

    def next_line(self, timeout: float) -> str:
        """The next line printed, waiting at most ``timeout`` seconds."""
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"peer printed nothing for {timeout}s") from None
        if line is None:
            self._lines.put(None)
            raise EOFError(f"peer exited with {self.process.wait()}")
        return line

    def kill(self) -> None:
        """SIGKILL the process (as a crash would) and reap it."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait()
        self._reader.join(timeout=5)
        if self.process.stdout is not None:
            self.process.stdout.close()

    def lines_so_far(self) -> list[str]:
        """Every complete line printed that has not been taken yet."""
        lines = []
        with contextlib.suppress(queue.Empty):
            while (line := self._lines.get_nowait()) is not None:
                lines.append(line)
        return lines


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:]))
