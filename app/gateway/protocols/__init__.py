"""The RPC protocols beside REST, one room each, all behind the same router, gate, codec and
invoker: Connect (`connect`), gRPC-Web (`grpc_web`), WebSocket (`websocket`); `detect` says which
one a request speaks, `enveloped` and `envelopes` are the flow and framing the enveloped ones share.

REST itself (unary, NDJSON and SSE) is the core flow, `app.gateway.dispatch`. Protocols import the
core and the codec, never each other."""
