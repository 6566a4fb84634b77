"""Observability: Prometheus metrics, OpenTelemetry traces and request/audit logs.

Neutral ground: every layer may record here, and this package imports none of them. The
transports observe calls at their seams (the gateway's dispatchers and invoker, the gRPC
server's handler wrappers); the store, the gate and the simulation record their own numbers.
Servicers record nothing.
"""
