"""The replica harness's HAProxy configuration is one HAProxy accepts, with both transports
health-checked on /readyz (the harness itself is a separate command: tests/scale/run.py)."""

from __future__ import annotations

import shutil
import subprocess

from tests.conftest import require
from tests.scale.haproxy import Replica, config


def test_haproxy_accepts_the_harness_configuration(tmp_path):
    if shutil.which("haproxy") is None:
        require("haproxy", "apt-get install haproxy")
    replicas = [Replica(f"r{i}", 18000 + i, 19000 + i) for i in range(1, 4)]
    path = tmp_path / "haproxy.cfg"
    path.write_text(config(17080, 17051, replicas))
    checked = subprocess.run(
        ["haproxy", "-c", "-f", str(path)], capture_output=True, text=True, check=False
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    text = path.read_text()
    assert text.count("option httpchk GET /readyz") == 2  # REST and gRPC backends
    for r in replicas:
        assert f"127.0.0.1:{r.http_port} check" in text
        assert f"127.0.0.1:{r.grpc_port} proto h2 check port {r.http_port}" in text
