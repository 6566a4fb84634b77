"""The grpc.aio transport on a port of its own: the registry's methods on the same servicers the
gateway calls, with reflection, health and idempotency keys.

Like the gateway it knows descriptors, never a domain: the gate reaches it as a hook from
`app.main`."""
