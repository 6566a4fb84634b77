"""The Echo API (tests/proxy/protos) on a plain grpcio server with server reflection, run as a
process of its own: ``python echo_server.py --gen DIR --port N [--reflection v1alpha|both]``.

``DIR`` holds the generated ``portico/echo/v1/echo_pb2*.py``; a variant with the extra method
``Shout`` is served when it has one. grpcio-reflection serves v1alpha only; ``both`` serves
v1 too (with Portico's reflection servicer); ``none`` serves no reflection. Lines on stdout
say what happened: ``listening``, ``sleeping``, ``cancelled Count``, ``cancelled Sleep``.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import any_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_reflection.v1alpha import reflection
from grpc_status import rpc_status


def servicer_class(pb: Any, pb_grpc: Any) -> type:
    class Echo(pb_grpc.EchoServicer):  # type: ignore[misc,name-defined]
        def _reply(self, text: str, context: grpc.aio.ServicerContext) -> Any:
            seen = {k: v for k, v in context.invocation_metadata() if isinstance(v, str)}
            return pb.SayReply(text=text, metadata=seen, server="python")

        async def Say(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
            # The caller's address: which connection (which proxy worker) the call came on.
            await context.send_initial_metadata([("x-echo", "said"), ("x-peer", context.peer())])
            return self._reply(request.text, context)

        async def Count(
            self, request: Any, context: grpc.aio.ServicerContext
        ) -> AsyncIterator[Any]:
            finished = False
            try:
                for i in range(request.count):
                    yield self._reply(str(i), context)
                    await asyncio.sleep(request.interval_ms / 1000)
                finished = True
            finally:
                # A cancelled call ends this generator with CancelledError if it was sleeping,
                # but if grpc was sending its last reply, the generator is only closed after
                # (GeneratorExit at the yield): either way the call ended before its count.
                if not finished:
                    print("cancelled Count", flush=True)

        async def Sum(self, requests: AsyncIterator[Any], context: grpc.aio.ServicerContext) -> Any:
            total = count = 0
            async for number in requests:
                total += number.value
                count += 1
            return pb.Total(sum=total, count=count)

        async def Chat(
            self, requests: AsyncIterator[Any], context: grpc.aio.ServicerContext
        ) -> AsyncIterator[Any]:
            async for request in requests:
                yield self._reply(request.text.upper(), context)

        async def Fail(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
            violation = error_details_pb2.BadRequest.FieldViolation(
                field="text", description=f"{request.text!r} is not welcome"
            )
            detail = any_pb2.Any()
            detail.Pack(error_details_pb2.BadRequest(field_violations=[violation]))
            status = status_pb2.Status(
                code=code_pb2.FAILED_PRECONDITION, message="no echo today", details=[detail]
            )
            await context.abort_with_status(rpc_status.to_status(status))

        async def Sleep(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
            print("sleeping", flush=True)
            try:
                await asyncio.sleep(request.millis / 1000)
            except asyncio.CancelledError:
                if context.time_remaining() is None or context.time_remaining() > 0:
                    print("cancelled Sleep", flush=True)  # by the caller, not its deadline
                raise
            return self._reply("awake", context)

        async def Shout(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
            return self._reply(request.text.upper() + "!", context)

    return Echo


async def serve(port: int, reflection_versions: str, tls: list[str] | None) -> None:
    pb = importlib.import_module("portico.echo.v1.echo_pb2")
    pb_grpc = importlib.import_module("portico.echo.v1.echo_pb2_grpc")
    service = pb.DESCRIPTOR.services_by_name["Echo"].full_name  # its package may vary
    server = grpc.aio.server()
    pb_grpc.add_EchoServicer_to_server(servicer_class(pb, pb_grpc)(), server)
    if reflection_versions == "both":
        from app.grpc_server.reflection import Reflection

        server.add_generic_rpc_handlers(Reflection([service]).handlers())
    elif reflection_versions == "v1alpha":
        reflection.enable_server_reflection([service, reflection.SERVICE_NAME], server)
    if tls:  # certificate, key, and the CA its callers' certificates must be signed by
        cert, key, client_ca = (Path(path).read_bytes() for path in tls)
        credentials = grpc.ssl_server_credentials(
            [(key, cert)], root_certificates=client_ca, require_client_auth=True
        )
        server.add_secure_port(f"127.0.0.1:{port}", credentials)
    else:
        server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    print("listening", flush=True)
    await server.wait_for_termination()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gen", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--reflection", choices=["v1alpha", "both", "none"], default="v1alpha")
    parser.add_argument("--tls", nargs=3, metavar=("CERT", "KEY", "CLIENT_CA"))
    args = parser.parse_args()
    sys.path.insert(0, args.gen)
    asyncio.run(serve(args.port, args.reflection, args.tls))


if __name__ == "__main__":
    main()
