"""``portico proxy`` fronts another server's APIs: it must not load Portico's own five (their
servicers, the simulation, the catalog), which cost it start-up time and memory and would let
their code run where it has no business."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import json, sys
import app.proxy.run, app.proxy.server, app.proxy.pyvoy_app, app.server.pyvoy_worker
print(json.dumps(sorted(sys.modules)))
"""


# The login's messages, and the timestamp they carry, are the proxy's own.
LOGIN_MESSAGES = ("gen.services", "gen.resources.timestamp")


def test_the_proxy_loads_none_of_portico_s_apis():
    # A fresh interpreter: this test process has imported everything already.
    env = {"PORTICO_APPLICATION": "app.proxy.pyvoy_app:EnvoyProxy"}
    out = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, env=env
    ).stdout
    loaded = json.loads(out)

    def of_an_api(name: str) -> bool:
        if name.startswith("gen."):
            return name != "gen.resources" and not name.startswith(LOGIN_MESSAGES)
        return name == "app.main" or name.startswith(("app.services", "app.sim", "app.catalog"))

    apis = [name for name in loaded if of_an_api(name)]
    assert apis == []
    assert "gen.services.auth.auth_pb2" in loaded  # the proxy's own login
