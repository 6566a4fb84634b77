"""Each registered node gets its own /24 out of a configurable pool (e.g. 10.128.0.0/16)."""

from __future__ import annotations

import ipaddress
from collections.abc import Collection


class SubnetPoolExhausted(Exception):
    """Every /24 of the pool is taken."""


def allocate_subnet(pool: str, taken: Collection[str], prefix: int = 24) -> str:
    """The first /``prefix`` of ``pool`` not in ``taken``, as CIDR text."""
    network = ipaddress.ip_network(pool)
    for subnet in network.subnets(new_prefix=prefix):
        if str(subnet) not in taken:
            return str(subnet)
    raise SubnetPoolExhausted(f"no free /{prefix} left in {pool}")


def address_in(subnet: str, index: int) -> str:
    """The ``index``-th usable host address of ``subnet`` (1 is the first after the gateway)."""
    network = ipaddress.ip_network(subnet)
    hosts = network.num_addresses - 2
    if not 1 <= index < hosts:
        raise SubnetPoolExhausted(f"no address {index} in {subnet}")
    return str(network.network_address + 1 + index)
