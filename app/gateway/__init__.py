"""The HTTP gateway: one ASGI app built from descriptors that serves every RPC over REST/JSON,
streams and the RPC protocols, and ends each call in an `Invoker`.

The core sits at the top (routes, dispatch, stages, invoker, context, errors, HTTP I/O);
`protocols/` holds one room per RPC protocol, `codec/` the JSON mapping and message codecs,
`http/` the connection plumbing, `openapi/` the document generator and `pages/` the static
pages. It knows descriptors and nothing of any domain: no service, store, auth or simulation."""
