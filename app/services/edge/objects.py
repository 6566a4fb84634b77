"""Create, Update, Delete and Show for every keyed edge object, written once for all types.

The generic path works from the descriptors (the ``key`` field, the ``fields`` list, field
numbers); what differs per type lives in small hooks: defaults filled from a parent, resources
reserved, derived fields (an AppInst's URI and ports), and the resource manager's progress for
Cloudlet, ClusterInst and AppInst. Behaviour where SPEC is silent:

- Update needs a non-empty ``fields``; an entry naming the key, ``fields`` or a field the
  controller sets (``state``, ``errors``, ...) is INVALID_ARGUMENT on ``fields[i]``.
- A missing reference is NOT_FOUND naming the field (``key.developer_key: Developer {...} not
  found``); deleting a referenced object is FAILED_PRECONDITION naming the referrer.
- A ClusterInst without a flavor takes its Cluster's default flavor, an AppInst its App's.
  A ClusterInst with neither ``num_masters`` nor ``num_nodes`` gets one master.
- Changing a Flavor's size while a ClusterInst or AppInst uses it is FAILED_PRECONDITION (the
  accounting in CloudletRefs/ClusterRefs was made with the old size).
- An operation on a Cloudlet/ClusterInst/AppInst that is still being created, updated or
  deleted is FAILED_PRECONDITION naming its state (unless the request's ``crm_override``
  ignores transient state); deleting one already being deleted follows that deletion.
  Creating on a parent being deleted is FAILED_PRECONDITION.
- Creating again what a failed create left behind is a retry; deleting it needs no CRM.
- An App with ``del_opt: AUTO_DELETE`` takes its AppInsts with it; an AppInst naming an
  ``autocluster...`` ClusterInst that does not exist creates it (see the edge walkthrough).
"""

from __future__ import annotations

from typing import Any

import grpc
from google.protobuf.message import Message

import app.services.edge.kinds as k
from app.services import revisions
from app.services.edge import crm, key_index, references, update_fields
from app.services.edge.fields import apply, matches, update_paths
from app.services.edge.progress import (
    CO,
    CREATE,
    DELETE,
    UPDATE,
    Progress,
    current,
    follow,
    ignores_transient,
)
from app.services.edge.records import load, load_all, put
from app.services.edge.type_hooks import TypeHooks
from app.services.edge.validation import check_key, check_object
from app.services.status import Rejected, Violations
from app.sim.clock import Clock
from app.store import ObjectStore, Transaction
from gen.edgeproto import app_inst_pb2, app_pb2, cluster_pb2, clusterinst_pb2, common_pb2

Code = grpc.StatusCode
PROTECTED = update_fields.PROTECTED  # the key and `fields`
# ClusterInsts named like this are made for (and removed with) the AppInsts that name them.
AUTO_CLUSTER_PREFIX = "autocluster"


def without_fields(kind: k.EdgeType, request: Message) -> Any:
    """A copy of ``request`` without the ``fields`` list (never stored)."""
    obj = kind.message()
    obj.CopyFrom(request)
    obj.ClearField(k.FIELDS_FIELD)
    return obj


class EdgeObjects:
    """The keyed objects in the store, with references, resources and progress."""

    def __init__(self, store: ObjectStore, clock: Clock) -> None:
        self.store = store
        self.clock = clock
        hooks = TypeHooks(clock)
        self._before_create = hooks.before_create
        self._before_update = hooks.before_update

    # -- the generic operations ----------------------------------------------------------------

    async def create(self, kind: k.EdgeType, request: Message) -> tuple[Progress | None, int]:
        """Store a new object; its progress (tracked types) and the commit's revision.

        Creating again what a failed create left behind (CREATE_ERROR) is a retry.
        """
        obj = without_fields(kind, request)
        found = Violations()
        check_object(kind, obj, found)
        if found:
            raise Rejected.invalid(found)
        async with self.store.transaction() as tx:
            progress = await self._create_in(tx, kind, obj)
        return progress, tx.revision

    async def _create_in(self, tx: Transaction, kind: k.EdgeType, obj: Any) -> Progress | None:
        old = await load(tx, kind, kind.key_of(obj))
        if old is not None:
            await self._retryable(tx, kind, old)
        # Defaults come from stored (so already valid) parents.
        await self._fill_defaults(tx, kind, obj)
        if kind is k.APP_INST:
            await self._auto_cluster(tx, obj)
        await self._check_references(tx, kind, obj)
        hook = self._before_create.get(kind.name)
        if hook is not None:
            await hook(tx, None, obj)
        await put(tx, kind, obj)
        if kind not in crm.TRACKED:
            return None
        override = getattr(obj, "crm_override", CO.NO_OVERRIDE)
        return await crm.begin(tx, kind, obj, CREATE, self.clock.now(), override)

    async def _retryable(self, tx: Transaction, kind: k.EdgeType, old: Any) -> None:
        """ALREADY_EXISTS unless ``old`` is a failed create, whose holdings are then released."""
        info = None
        if kind in crm.TRACKED:
            info = await load(tx, k.INFO_OF[kind.name], kind.key_of(old))
        running = await current(tx, kind, old) if kind in crm.TRACKED else None
        if kind not in crm.TRACKED or running is not None or not crm.failed_create(kind, old, info):
            raise Rejected(Code.ALREADY_EXISTS, f"{kind.describe(old)} already exists")
        if kind is k.CLUSTER_INST:
            await crm.release_cluster_inst(tx, old)
        elif kind is k.APP_INST:
            await crm.release_app_inst(tx, old)

    async def update(self, kind: k.EdgeType, request: Message) -> tuple[Progress | None, int]:
        """Apply the listed ``fields``; the progress if anything changed (tracked types)."""
        found = Violations()
        check_key(kind, request, found)
        paths = update_paths(
            kind.descriptor,
            list(getattr(request, k.FIELDS_FIELD)),
            protected=PROTECTED,
            read_only=kind.read_only,
            found=found,
        )
        if found:
            raise Rejected.invalid(found)
        progress = None
        override = getattr(request, "crm_override", CO.NO_OVERRIDE)
        async with self.store.transaction() as tx:
            old = await self._existing(tx, kind, request)
            await self._require_settled(tx, kind, old, override)
            new = kind.message()
            new.CopyFrom(old)
            for path in paths:
                apply(new, request, path)
            check_object(kind, new, found)
            if found:
                raise Rejected.invalid(found)
            if new == old:
                return None, 0
            await self._check_references(tx, kind, new)
            hook = self._before_update.get(kind.name)
            if hook is not None:
                await hook(tx, old, new)
            await tx.update(kind.kind, kind.store_key(new), new)
            if kind in crm.TRACKED:
                progress = await crm.begin(tx, kind, new, UPDATE, self.clock.now(), override)
        return progress, tx.revision

    async def delete(self, kind: k.EdgeType, request: Message) -> tuple[Progress | None, int]:
        """Delete an unreferenced object (tracked types: start its deletion).

        Deleting what a failed create left behind needs no CRM (nothing was built): it goes at
        once. An App with ``del_opt: AUTO_DELETE`` first deletes its AppInsts and waits for them.
        """
        found = Violations()
        check_key(kind, request, found)
        if found:
            raise Rejected.invalid(found)
        if kind is k.APP:
            # The App's If-Match is checked before its AppInsts go (and again when it goes).
            async with self.store.transaction() as tx:
                await self._existing(tx, kind, request)
            with revisions.unconditional():
                await self._delete_app_insts_of(request)
        override = getattr(request, "crm_override", CO.NO_OVERRIDE)
        async with self.store.transaction() as tx:
            obj = await self._existing(tx, kind, request)
            if kind in crm.TRACKED and not ignores_transient(override):
                running = await current(tx, kind, obj)
                if running is not None and running.action == DELETE:
                    return running, await self.store.current_revision()
            await self._require_settled(tx, kind, obj, override)
            user = await references.referrer(tx, kind, kind.key_of(obj))
            if user is not None:
                raise Rejected(
                    Code.FAILED_PRECONDITION, f"{kind.describe(obj)} is in use by {user}"
                )
            if kind in crm.TRACKED:
                info = await load(tx, k.INFO_OF[kind.name], kind.key_of(obj))
                if crm.failed_create(kind, obj, info):
                    override = CO.IGNORE_CRM
                progress = await crm.begin(tx, kind, obj, DELETE, self.clock.now(), override)
                return progress, tx.revision
            await tx.delete(kind.kind, kind.store_key(obj))
        return None, tx.revision

    async def _delete_app_insts_of(self, request: Message) -> None:
        """AUTO_DELETE: delete the App's AppInsts and wait until they are gone."""
        app = await load(self.store, k.APP, k.APP.key_of(request))
        if app is None or app.del_opt != app_pb2.AUTO_DELETE:
            return
        for inst in await load_all(self.store, k.APP_INST):
            if inst.key.app_key != app.key:
                continue
            progress, revision = await self.delete(k.APP_INST, app_inst_pb2.AppInst(key=inst.key))
            if progress is None:
                continue
            try:
                async for _ in follow(self.store, progress, revision):
                    pass
            except Rejected as failed:
                raise Rejected(
                    Code.FAILED_PRECONDITION,
                    f"{k.APP.describe(app)} not deleted: its AUTO_DELETE of "
                    f"{k.APP_INST.describe(inst)} failed: {failed.message}",
                ) from None

    async def show(self, kind: k.EdgeType, request: Message) -> list[Any]:
        """Every stored object matching the request's non-empty fields, in key order."""
        return [obj for obj, _ in await self.shown(kind, request)]

    async def shown(self, kind: k.EdgeType, request: Message) -> list[tuple[Any, int]]:
        """:meth:`show`'s objects, each with its revision."""
        key = kind.key_of(request)
        entry = key_index.entry_for(key)
        if k.is_whole_key(key):  # a primary-key read instead of a scan of the kind
            found = await self.store.get(kind.kind, k.key_string(key))
            records = [] if found is None else [found]
        elif entry is not None:  # part of the key: the objects holding one of its values
            records = await self.store.list_where(kind.kind, key_index.INDEX, entry)
        else:
            records = await self.store.list(kind.kind)
        return [
            (obj, revision)
            for obj, revision in ((kind.parse(r.data), r.revision) for r in records)
            if matches(obj, request, skip=frozenset({k.FIELDS_FIELD}))
        ]

    # -- shared checks ---------------------------------------------------------------------------

    async def _existing(self, tx: Transaction, kind: k.EdgeType, request: Message) -> Any:
        """The object a write names, at the revision the call's ``if-match`` asks for."""
        record = await tx.get(kind.kind, k.key_string(kind.key_of(request)))
        if record is None:
            raise references.not_found(kind, kind.key_of(request), "key")
        obj = kind.parse(record.data)
        revisions.check_if_match(record.revision, kind.describe(obj))
        return obj

    async def _check_references(self, tx: Transaction, kind: k.EdgeType, obj: Message) -> None:
        missing = await references.missing_reference(tx, kind, obj)
        if missing is not None:
            raise missing

    async def _require_settled(
        self, tx: Transaction, kind: k.EdgeType, obj: Message, override: int = 0
    ) -> None:
        """FAILED_PRECONDITION while ``obj`` is being created, updated or deleted (unless the
        request says IGNORE_TRANSIENT_STATE)."""
        if kind not in crm.TRACKED or ignores_transient(override):
            return
        running = await current(tx, kind, obj)
        if running is not None:
            raise Rejected(
                Code.FAILED_PRECONDITION,
                f"{kind.describe(obj)} is {common_pb2.TrackedState.Name(running.state)}; "
                "try again once it is READY",
            )

    async def _fill_defaults(self, tx: Transaction, kind: k.EdgeType, obj: Any) -> None:
        if kind is k.CLUSTER_INST:
            if k.is_empty(obj.flavor):
                cluster = await load(tx, k.CLUSTER, obj.key.cluster_key)
                if cluster is not None:
                    obj.flavor.CopyFrom(cluster.default_flavor)
            if not obj.num_masters and not obj.num_nodes:
                obj.num_masters = 1
        elif kind is k.APP_INST and k.is_empty(obj.flavor):
            app = await load(tx, k.APP, obj.key.app_key)
            if app is not None:
                obj.flavor.CopyFrom(app.default_flavor)

    async def _auto_cluster(self, tx: Transaction, obj: app_inst_pb2.AppInst) -> None:
        """Create the ClusterInst an AppInst names by the auto-cluster convention, if missing."""
        key = obj.key.cluster_inst_key
        if not key.cluster_key.name.startswith(AUTO_CLUSTER_PREFIX):
            return
        if await load(tx, k.CLUSTER_INST, key) is not None:
            return
        if await load(tx, k.CLUSTER, key.cluster_key) is None:
            cluster = cluster_pb2.Cluster(key=key.cluster_key, default_flavor=obj.flavor, auto=True)
            await self._check_references(tx, k.CLUSTER, cluster)
            await put(tx, k.CLUSTER, cluster)
        inst = clusterinst_pb2.ClusterInst(
            key=key,
            flavor=obj.flavor,
            auto=True,
            liveness=common_pb2.LIVENESS_DYNAMIC,
            ip_access=obj.auto_cluster_ip_access,
            num_masters=1,
            num_nodes=1,
        )
        await self._create_in(tx, k.CLUSTER_INST, inst)
