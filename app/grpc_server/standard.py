"""gRPC's own services, health (``grpc.health.v1``) and reflection (v1 and v1alpha), as one
registry and its servicers: the grpc.aio port serves them, and so does the HTTP port, where
they are plain methods behind the same router, gate and invoker as the APIs (the gate's policy
makes them public). One health servicer answers on both, so both report the same status."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from typing import Any, cast

from google.protobuf.descriptor import FileDescriptor
from grpc_health.v1 import health, health_pb2
from grpc_reflection.v1alpha import reflection_pb2

from app.gateway.registry import Registry
from app.grpc_server.reflection import V1, V1ALPHA, Reflection, v1_file


class _ReflectionServicer:
    """``ServerReflectionInfo`` as a servicer method, for either version's service."""

    def __init__(self, reflection: Reflection) -> None:
        self._reflection = reflection

    async def ServerReflectionInfo(  # the RPC's name
        self, requests: AsyncIterator[Any], context: Any
    ) -> AsyncIterator[Any]:
        # An async generator, as streaming servicers are (both ports' wrappers tell them so).
        async for reply in self._reflection.info(_as_v1alpha(requests), context):
            yield reply


async def _as_v1alpha(requests: AsyncIterator[Any]) -> AsyncIterator[Any]:
    """v1's requests (decoded as v1's own class here) as v1alpha's: the same wire format."""
    async for request in requests:
        if not isinstance(request, reflection_pb2.ServerReflectionRequest):
            request = reflection_pb2.ServerReflectionRequest.FromString(request.SerializeToString())
        yield request


class StandardServices:
    """Health and reflection over ``services`` (the full names of the APIs served)."""

    def __init__(self, services: Iterable[str]) -> None:
        self.health = health.aio.HealthServicer()
        self.reflection = Reflection((*services, health.SERVICE_NAME))
        self.registry = Registry(
            [
                cast(FileDescriptor, health_pb2.DESCRIPTOR),
                cast(FileDescriptor, reflection_pb2.DESCRIPTOR),
                v1_file(),
            ],
            only={health.SERVICE_NAME, V1, V1ALPHA},
        )
        reflection = _ReflectionServicer(self.reflection)
        self.servicers: dict[str, object] = {
            health.SERVICE_NAME: self.health,
            V1: reflection,
            V1ALPHA: reflection,
        }

    async def serving(self, served: Iterable[str]) -> None:
        """Report the server, and each of the services ``served``, SERVING."""
        for name in ("", *served):
            await self.health.set(name, health_pb2.HealthCheckResponse.SERVING)

    async def stopping(self) -> None:
        """Report everything NOT_SERVING for good (a graceful shutdown has begun)."""
        await self.health.enter_graceful_shutdown()
