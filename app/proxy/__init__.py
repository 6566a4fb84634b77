"""``portico proxy``: the gateway in front of another gRPC server (see ``server.py``)."""
