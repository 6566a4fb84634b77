"""One call of any method over gRPC, whatever its streaming kind, for tests that sweep methods."""

from __future__ import annotations

from typing import Any

import grpc

from app.gateway.registry import Method


def _bearer(token: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),)


# grpcio's asyncio client reports a request it failed to write, because the server had already
# ended the call (a refusal at the headers), as this INTERNAL instead of the server's status
# (grpc/grpc#36066). It is the client's view only: the call is made again.
_CLIENT_WRITE_RACE = "Internal error from Core"
_ATTEMPTS = 3


async def grpc_call(
    channel: grpc.aio.Channel, method: Method, token: str | None = None, request: Any = None
) -> grpc.StatusCode:
    """Call ``method`` with an empty (or given) request; the status code it ended with."""
    for _ in range(_ATTEMPTS):
        code, details = await _grpc_call_once(channel, method, token, request)
        if not (code is grpc.StatusCode.INTERNAL and _CLIENT_WRITE_RACE in details):
            break
    return code


async def _grpc_call_once(
    channel: grpc.aio.Channel, method: Method, token: str | None, request: Any
) -> tuple[grpc.StatusCode, str]:
    request = request if request is not None else method.input_type()
    metadata = _bearer(token) if token else ()
    kwargs = {
        "request_serializer": method.input_type.SerializeToString,
        "response_deserializer": method.output_type.FromString,
    }
    try:
        if method.kind == "unary":
            await channel.unary_unary(method.grpc_path, **kwargs)(request, metadata=metadata)
        elif method.kind == "server_streaming":
            call = channel.unary_stream(method.grpc_path, **kwargs)(request, metadata=metadata)
            async for _ in call:
                break
            call.cancel()
        elif method.kind == "client_streaming":
            await channel.stream_unary(method.grpc_path, **kwargs)(
                iter([request]), metadata=metadata
            )
        else:
            call = channel.stream_stream(method.grpc_path, **kwargs)(
                iter([request]), metadata=metadata
            )
            async for _ in call:
                break
            call.cancel()
    except grpc.aio.AioRpcError as error:
        return error.code(), error.details() or ""
    return grpc.StatusCode.OK, ""
