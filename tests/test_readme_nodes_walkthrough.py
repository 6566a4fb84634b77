"""The site's nodes/instances/pods walkthrough, as a reader pastes it: its shell blocks,
unchanged but for the server's ports, against the Kubernetes walkthrough's ``portico serve
--demo`` with its two simulated nodes (the page allows either server; the demo's pods on
``sim-node-1`` made that node a tighter fit than the 4-core agent the page once started), with
``AUTH`` and ``TOKEN`` set as the quick start leaves them. Its instance runs on the real node
the walkthrough starts, as its comments say, and the gRPC block needs no tool but ``portico``.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import httpx
import pytest

from tests.conftest import ROOT, require
from tests.serve_process import TEST_ENV, run_as_pasted, serve_process

pytestmark = pytest.mark.slow  # a server of its own: scheduled first (tests/conftest.py)


def nodes_walkthrough(page: str) -> list[str]:
    """The shell blocks of the site's nodes walkthrough."""
    return re.findall(r"^```sh\n(.*?)^```$", page, re.M | re.S)


def test_the_nodes_walkthrough_places_its_instance_on_the_real_node(tmp_path: Path):
    bin_dir = Path(sys.executable).parent
    if not (bin_dir / "portico").exists() or shutil.which("curl") is None:
        require("curl and the portico command", "the walkthrough runs both")
    blocks = nodes_walkthrough((ROOT / "docs" / "how-to" / "walkthrough-nodes.md").read_text())
    assert len(blocks) == 2
    assert "grpcurl" not in blocks[1], "the gRPC block needs only what Portico installs"
    env = {"PORTICO_SIM_STEP_SECONDS": "0.05", "PORTICO_SIM_NODES": "2"}
    with serve_process(
        [sys.executable], tmp_path / "data", cwd=tmp_path, args=["--demo"], env=env
    ) as [served]:
        login = {"username": "admin", "password": TEST_ENV["PORTICO_ADMIN_PASSWORD"]}
        token = httpx.post(f"{served.http_base}/v1/auth:login", json=login).json()["token"]
        http_port = served.http_base.rsplit(":", 1)[1]
        script = tmp_path / "walkthrough.sh"
        script.write_text(
            # Not -e: the streams' `curl --max-time` end with exit status 28 by design.
            blocks[0]
            .replace("localhost:8080", f"localhost:{http_port}")
            .replace("127.0.0.1:50051", f"127.0.0.1:{served.grpc_port}")
            + "\n"
            + blocks[1]
        )
        ran = run_as_pasted(
            script,
            tmp_path,
            token,
            timeout=150,
            PORTICO_GRPC_PORT=str(served.grpc_port),
            PORTICO_LOGIN_FILE=str(tmp_path / "login.json"),
        )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    # Every portico command did its part; Create's stream was let go of by its --timeout.
    said = ran.stderr.replace("portico: no complete answer within 5 s (--timeout)\n", "", 1)
    assert "portico:" not in said, ran.stderr
    # The pod of the instance, as `GET /v1/runtime/pods/$ID` printed it: on the real node.
    decoder = json.JSONDecoder()
    pods = []
    for start in (m.start() for m in re.finditer(r'^\{"pod"', ran.stdout, re.M)):
        pods.append(decoder.raw_decode(ran.stdout, start)[0]["pod"])
    [web] = [pod for pod in pods if pod["id"] == "web-7f9c2"][:1]
    # The annotation key is spelled "Key", as in the original protos.
    node = {a["Key"]: a["value"] for a in web["annotations"]}["scheduler/node"]
    assert node == "edge-1", web
    # The gRPC block: Create's stream (let go of by `timeout`), then ListPods with the new pod.
    assert '"status": "RUNNING"' in ran.stdout
    listed = ran.stdout[ran.stdout.rindex('{\n  "pods"') :]
    assert '"name": "db"' in listed
