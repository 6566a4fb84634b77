"""The container scheduler: ``scheduler.NodeService`` and ``scheduler.InstanceService``.

Behaviour where SPEC is silent:
- Node id = the certificate's subject CN (a DNS label), or the opaque node identifier sent in its
  place (see :mod:`app.services.kudo.certificates`). Over gRPC with TLS client certificates, an
  empty ``certificate`` means the verified client certificate of the connection. Re-registering
  with the same certificate returns the same subnet; another certificate for a registered id is
  ALREADY_EXISTS (unregister first). Expired or not-yet-valid certificates are INVALID_ARGUMENT.
  ``code`` is 0 on success; every failure is a gRPC status instead.
- A node is schedulable while its latest report says RUNNING with a non-zero limit. One Status
  stream reports one node; unchanged reports are stored at most every quarter grace period. A
  node may report FAILED itself: its instances are rescheduled at once.
- After a stream ends the node has ``node_grace_seconds`` to report again before it is FAILED (an
  open but silent stream counts as ended after four grace periods). A failed node that reports
  again is healthy again; its old instances have moved on.
- Instances of a lost node: DESTROYING ones finish as TERMINATED, those no remaining healthy node
  could ever hold are FAILED, the rest return to SCHEDULING and are placed again (a stopped one
  stays stopped). Unregister frees the node's subnet.
- Create ignores the output fields ``status``, ``ip`` and ``resource.usage``. It keeps an ``id``
  the client chose (as the original controller does; taken → ALREADY_EXISTS) and assigns a UUID
  when it is empty. Names need not be unique: the id identifies an instance.
- Stop on a STOPPING/STOPPED instance and Destroy on a DESTROYING/TERMINATED one answer OK and
  change nothing (retries); other illegal transitions are FAILED_PRECONDITION.
- STOPPED instances keep their node, address and reservation; Start resumes them there.
- A ``node`` account speaks for one node only, the one named like the account (as Kubernetes'
  NodeRestriction binds a kubelet to its Node): it may register a certificate with that CN,
  report that id's status and unregister it; anything else is PERMISSION_DENIED. Admins and
  operators may act for any node.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator

import grpc
from google.protobuf import empty_pb2

from app.calls.callers import Role, current_caller
from app.services.checked import checks_own_fields
from app.services.kudo import instances, nodes
from app.services.kudo.certificates import (
    InvalidCertificate,
    read_node_identity,
    verified_peer_certificate,
)
from app.services.kudo.errors import SchedulerError
from app.services.kudo.validation import instance_violations
from app.services.status import Violations, abort_invalid, abort_rejected, abort_store_error
from app.sim.clock import Clock
from app.store import ObjectStore, StoreError
from gen.scheduler import scheduler_pb2 as pb
from gen.scheduler import scheduler_pb2_grpc as pb_grpc


def _check_speaks_for(node_id: str) -> None:
    """Refuse a node account acting for a node other than its own (see the module docstring)."""
    caller = current_caller.get()
    if caller is None:
        # Only the gate sets a caller; without one this servicer was wired up without it, and
        # "nobody known" must not mean "may speak for any node".
        raise SchedulerError(
            grpc.StatusCode.UNAUTHENTICATED, "no authenticated caller to act for a node"
        )
    if caller.role == Role.NODE and node_id != caller.username:
        raise SchedulerError(
            grpc.StatusCode.PERMISSION_DENIED,
            f"node account {caller.username!r} may act only for node {caller.username!r}, "
            f"not {node_id!r}",
        )


async def _refuse(context: grpc.aio.ServicerContext, error: Exception) -> None:
    if isinstance(error, SchedulerError):
        await abort_rejected(context, error)
    if isinstance(error, StoreError):
        await abort_store_error(context, error)
    raise error


class NodeService(pb_grpc.NodeServiceServicer):
    """Nodes register, stream their status and leave."""

    def __init__(
        self, store: ObjectStore, clock: Clock, subnet_pool: str, grace_seconds: float
    ) -> None:
        self.store = store
        self.clock = clock
        self.subnet_pool = subnet_pool
        self.grace_seconds = grace_seconds
        self.open_streams = 0

    async def Register(
        self, request: pb.NodeRegisterRequest, context: grpc.aio.ServicerContext
    ) -> pb.NodeRegisterResponse:
        presented = request.certificate
        if not presented.strip():
            presented = verified_peer_certificate(context.auth_context()) or ""
        if not presented.strip():
            found = Violations()
            found.add(
                "certificate",
                "is required (a PEM X.509 certificate whose CN is the node id, or the node id)",
            )
            await abort_invalid(context, found)
        try:
            certificate = read_node_identity(presented)
            _check_speaks_for(certificate.node_id)
            node, description = await nodes.register_node(self.store, certificate, self.subnet_pool)
        except InvalidCertificate as exc:
            found = Violations()
            found.add("certificate", str(exc))
            await abort_invalid(context, found)
        except (SchedulerError, StoreError) as exc:
            await _refuse(context, exc)
        return pb.NodeRegisterResponse(code=0, description=description, subnet=node.subnet)

    async def Status(
        self, request_iterator: AsyncIterator[pb.NodeStatus], context: grpc.aio.ServicerContext
    ) -> empty_pb2.Empty:
        self.open_streams += 1
        node_id = ""
        last_report = 0.0
        try:
            async for message in request_iterator:
                found = nodes.status_violations(message)
                if node_id and message.id != node_id:
                    found.add("id", f"this stream reports node {node_id!r}; open one per node")
                if found:
                    await abort_invalid(context, found)
                try:
                    _check_speaks_for(message.id)
                    await nodes.report_status(
                        self.store,
                        message,
                        self.clock,
                        first=not node_id,
                        refresh_seconds=self.grace_seconds / 4,
                    )
                except (SchedulerError, StoreError) as exc:
                    await _refuse(context, exc)
                node_id, last_report = message.id, time.time()
        finally:
            self.open_streams -= 1
            if node_id:
                # Shielded: a cancelled call (the client went away) must still record the end.
                with contextlib.suppress(StoreError, asyncio.CancelledError):
                    await asyncio.shield(nodes.end_status_stream(self.store, node_id, last_report))
        return empty_pb2.Empty()

    async def Unregister(
        self, request: pb.NodeUnregisterRequest, context: grpc.aio.ServicerContext
    ) -> pb.NodeUnregisterResponse:
        if not request.id:
            found = Violations()
            found.add("id", "is required (the node id)")
            await abort_invalid(context, found)
        try:
            _check_speaks_for(request.id)
            description = await nodes.unregister_node(self.store, request.id, self.clock)
        except (SchedulerError, StoreError) as exc:
            await _refuse(context, exc)
        return pb.NodeUnregisterResponse(code=0, description=description)


class InstanceService(pb_grpc.InstanceServiceServicer):
    """Controllers create instances and start, stop and destroy them."""

    def __init__(self, store: ObjectStore, clock: Clock) -> None:
        self.store = store
        self.clock = clock
        self.open_streams = 0

    @checks_own_fields
    async def Create(
        self, request: pb.Instance, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[pb.InstanceStatus]:
        found = instance_violations(request)
        if found:
            await abort_invalid(context, found)
        self.open_streams += 1
        try:
            try:
                record, revision = await instances.create_instance(self.store, request, self.clock)
            except StoreError as exc:
                await _refuse(context, exc)
            last = record.instance_status()
            yield last
            async for instance in instances.follow_instance(self.store, record.id, revision):
                status = instance.instance_status()
                if status != last:
                    last = status
                    yield status
        finally:
            self.open_streams -= 1

    async def _request(
        self, request: pb.InstanceIdentifier, context: grpc.aio.ServicerContext, what: str
    ) -> empty_pb2.Empty:
        if not request.id:
            found = Violations()
            found.add("id", "is required (the instance id Create returned)")
            await abort_invalid(context, found)
        try:
            await instances.request_transition(self.store, request.id, what, self.clock)
        except (SchedulerError, StoreError) as exc:
            await _refuse(context, exc)
        return empty_pb2.Empty()

    async def Start(
        self, request: pb.InstanceIdentifier, context: grpc.aio.ServicerContext
    ) -> empty_pb2.Empty:
        return await self._request(request, context, "start")

    async def Stop(
        self, request: pb.InstanceIdentifier, context: grpc.aio.ServicerContext
    ) -> empty_pb2.Empty:
        return await self._request(request, context, "stop")

    async def Destroy(
        self, request: pb.InstanceIdentifier, context: grpc.aio.ServicerContext
    ) -> empty_pb2.Empty:
        return await self._request(request, context, "destroy")
