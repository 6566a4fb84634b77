"""``portico policy``: who may call each method, as the server would decide at start."""

from __future__ import annotations

from pathlib import Path

from app import catalog
from app.auth.policy import Policy
from app.auth.policy_file import effective_table, load_if_set
from app.auth.service import ACCESS as LOGIN_ACCESS
from app.gateway.registry import Registry
from app.proxy.descriptors import DescriptorError, from_file_set
from app.settings.config import ConfigurationError, Settings


def print_policy(settings: Settings) -> None:
    """One line per method: its full name, the roles that may call it (or ``public``,
    ``signed-in``), and which rule says so; ConfigurationError as ``serve`` would stop with."""
    file = load_if_set(settings.policy_file)
    if settings.descriptor_set:
        path = settings.descriptor_set
        try:
            found = from_file_set(Path(path).read_bytes(), path)
        except (OSError, DescriptorError) as exc:
            raise ConfigurationError(f"--descriptor-set: {exc}") from None
        files = [found.pool.FindServiceByName(name).file for name in found.services]
        registry = Registry(files, only=set(found.services))
        policy = Policy(LOGIN_ACCESS, file)
        if file is not None:
            file.check(m.full_name for m in registry)
    else:
        registry = catalog.registry()
        policy = catalog.policy(registry, file)
    rows = effective_table(policy, [m.full_name for m in registry])
    width = max(len(name) for name, _, _ in rows)
    roles = max(len(who) for _, who, _ in rows)
    for name, who, why in rows:
        print(f"{name:<{width}}  {who:<{roles}}  {why}")
