"""The reconciler's copy of the stored clusters: read whole once, then kept current from the
event log.

A pass reads what was written since the previous pass, not every record: with ten thousand
stored clusters, reading them all on every pass (a few milliseconds apart) made the reconciler
the busiest reader of the store while nothing changed. Nothing here outlives a leadership term:
a new term (or a log compacted past what this copy has read) starts from a whole read again.
"""

from __future__ import annotations

from collections.abc import Iterator

from app.services.kaas.records import (
    CLUSTER,
    CLUSTER_SPEC,
    DEPLOYMENTS,
    MACHINE,
    Slot,
    parse_deployments,
    parse_machine,
)
from app.sim.machine_model import Machine
from app.sim.machines import AddressesInUse
from app.store import Event, EventType, ObjectStore, OutOfRange, Record

KINDS = (CLUSTER, CLUSTER_SPEC, MACHINE, DEPLOYMENTS)


def cluster_of(key: str) -> str:
    """The cluster a record of any of the KINDS belongs to (machines and deployments are keyed
    ``<cluster>/<pool>/<index>``)."""
    return key.partition("/")[0]


class ClusterMirror:
    """Every record of the KINDS by kind, cluster and key, at the revision read through."""

    def __init__(self, store: ObjectStore) -> None:
        self._store = store
        self._clear()

    def _clear(self) -> None:
        self._revision: int | None = None  # read through this revision; None: read everything
        self._records: dict[str, dict[str, dict[str, Record]]] = {kind: {} for kind in KINDS}
        # Machines decoded, by key, with the revision decoded.
        self._machines: dict[str, tuple[int, Machine]] = {}
        self._undecoded: set[str] = set()  # machine keys written since they were decoded

    async def catch_up(self) -> set[str]:
        """Take in what was written since the last call; the names of the clusters it touched
        (every stored one, the first time)."""
        if self._revision is not None:
            try:
                events, self._revision = await self._store.changes(KINDS, self._revision)
            except OutOfRange:
                self._clear()
            else:
                return {self._apply(event) for event in events}
        return await self._read_whole()

    async def _read_whole(self) -> set[str]:
        revision = await self._store.current_revision()
        for kind in KINDS:
            for record in await self._store.list(kind):
                self._put(record)
        # The lists may hold writes newer than ``revision``: their events change nothing.
        self._revision = revision
        await self.catch_up()
        return set(self._records[CLUSTER])

    def _apply(self, event: Event) -> str:
        name = cluster_of(event.key)
        held = self._records[event.kind].get(name, {}).get(event.key)
        if held is not None and held.revision >= event.revision:
            return name  # read already (a list, or this reconciler's own write)
        if event.type is EventType.DELETED:
            self._drop(event.kind, name, event.key)
        else:
            # When an object was created is not in its later events; the reconciler never asks.
            record = Record(event.kind, event.key, event.data, event.revision, event.at, event.at)
            self._put(record)
        return name

    def _put(self, record: Record) -> None:
        self._records[record.kind].setdefault(cluster_of(record.key), {})[record.key] = record
        if record.kind == MACHINE:
            decoded = self._machines.get(record.key)
            if decoded is None or decoded[0] != record.revision:
                self._undecoded.add(record.key)

    def _drop(self, kind: str, name: str, key: str) -> None:
        of_cluster = self._records[kind].get(name, {})
        of_cluster.pop(key, None)
        if not of_cluster:
            self._records[kind].pop(name, None)
        if kind == MACHINE:
            self._machines.pop(key, None)
            self._undecoded.discard(key)

    def remember(self, record: Record, machine: Machine) -> None:
        """A machine this process just wrote as ``record``: its event need not be decoded."""
        self._put(record)
        self._decoded(record, machine)

    def decode_written(self) -> Iterator[None]:
        """Decode the machines written since the last call, one a step (a thousand take a
        while: the caller runs the steps in slices)."""
        while self._undecoded:
            key = self._undecoded.pop()
            record = self._records[MACHINE].get(cluster_of(key), {}).get(key)
            if record is not None:
                self._decoded(record, parse_machine(record))
            yield None

    def _decoded(self, record: Record, machine: Machine) -> None:
        self._machines[record.key] = (record.revision, machine)
        self._undecoded.discard(record.key)

    def addresses_in_use(self) -> AddressesInUse:
        """Every address a stored machine holds (all decoded: after :meth:`decode_written`)."""
        return AddressesInUse(m.ip for _, m in self._machines.values() if m.holds_ip)

    def status(self, name: str) -> Record | None:
        return self._records[CLUSTER].get(name, {}).get(name)

    def spec(self, name: str) -> Record | None:
        return self._records[CLUSTER_SPEC].get(name, {}).get(name)

    def machine_records(self, name: str) -> list[Record]:
        """The cluster's machine records, by key (as a store list returns them)."""
        held = self._records[MACHINE].get(name, {})
        return [held[key] for key in sorted(held)]

    def machine(self, record: Record) -> Machine:
        """The decoded machine of ``record`` (decoded now if :meth:`decode_written` has not)."""
        decoded = self._machines.get(record.key)
        if decoded is None or decoded[0] != record.revision:
            self._decoded(record, parse_machine(record))
            decoded = self._machines[record.key]
        return decoded[1]

    def deployments(self, name: str) -> dict[Slot, int]:
        """Deployments so far of the cluster's released slots."""
        return parse_deployments(self._records[DEPLOYMENTS].get(name, {}).values()).get(name, {})
