"""The site's edge-cloud walkthrough, as a reader pastes it: its shell block, unchanged but for
the server's port, in one bash against a fresh ``portico serve --demo`` (with ``AUTH`` set as
the walkthrough before it leaves it), and what it prints is what its comments say: a failure, a
port allocation, a tenant-bound account and a NOT_FOUND with its details.

The simulated clock runs fast (``PORTICO_SIM_STEP_SECONDS``), so the progress streams take
milliseconds; password hashes are cheap, as in every test.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import ROOT, require
from tests.serve_process import TEST_ENV, run_as_pasted, serve_process

PAGE = ROOT / "docs" / "how-to" / "walkthrough-edge.md"

pytestmark = pytest.mark.slow  # a server of its own: scheduled first (tests/conftest.py)


def edge_walkthrough(page: str) -> str:
    """The shell block of the site's edge-cloud walkthrough."""
    [block] = re.findall(r"^```sh\n(.*?)^```$", page, re.M | re.S)
    return block


def printed(output: str) -> list[Any]:
    """What the walkthrough printed, in order: each JSON value parsed, other lines as text."""
    decoder = json.JSONDecoder()
    found: list[Any] = []
    position = 0
    while position < len(output):
        if output[position].isspace():
            position += 1
        elif output[position] == "{":
            value, position = decoder.raw_decode(output, position)
            found.append(value)
        else:
            end = output.find("\n", position)
            end = len(output) if end < 0 else end
            found.append(output[position:end])
            position = end
    return found


def _index(values: list[Any], wanted: Any, start: int = 0) -> int:
    """Where the first value from ``start`` on that ``wanted`` accepts is (it must be there)."""
    return next(i for i in range(start, len(values)) if wanted(values[i]))


def _result(message: str) -> dict:
    """A progress line of a successful step, as REST streams it."""
    return {"result": {"message": message, "code": 0}}


def test_the_edge_walkthrough_runs_as_written(tmp_path: Path):
    bin_dir = Path(sys.executable).parent
    if not (bin_dir / "portico").exists() or shutil.which("curl") is None:
        require("curl and the portico command", "the walkthrough runs both")
    env = {"PORTICO_SIM_STEP_SECONDS": "0.01"}
    with serve_process(
        [sys.executable], tmp_path / "data", cwd=tmp_path, args=["--demo"], env=env
    ) as [served]:
        login = {"username": "admin", "password": TEST_ENV["PORTICO_ADMIN_PASSWORD"]}
        token = httpx.post(f"{served.http_base}/v1/auth:login", json=login).json()["token"]
        port = served.http_base.rsplit(":", 1)[1]
        block = edge_walkthrough(PAGE.read_text())
        script = tmp_path / "walkthrough.sh"
        script.write_text(
            "set -eo pipefail\n" + block.replace("localhost:8080", f"localhost:{port}")
        )
        # `portico token` goes to this server's gRPC port (a reader's is on the default, 50051).
        grpc_port = str(served.grpc_port)
        ran = run_as_pasted(script, tmp_path, token, timeout=120, PORTICO_GRPC_PORT=grpc_port)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    out = printed(ran.stdout)

    # Progress follows the work, and ends READY.
    created = out.index(_result("Creating node 1 of 1 (sim.medium)"))
    assert out[created + 1 : created + 3] == [
        _result("Waiting for Cluster to Initialize"),
        _result("Ready"),
    ]

    # A port allocation: the shop's tcp:443 on the root LB's port 10000, recorded in CloudletRefs.
    shop = next(
        v["result"]
        for v in out
        if isinstance(v, dict)
        and v.get("result", {}).get("key", {}).get("app_key", {}).get("name") == "shop"
    )
    ports = [(p["proto"], p["internal_port"], p["public_port"]) for p in shop["mapped_ports"]]
    assert ports == [("L_PROTO_TCP", 443, 10000), ("L_PROTO_HTTP", 8080, 443)]
    [refs] = [
        v["result"] for v in out if isinstance(v, dict) and "root_lb_ports" in v.get("result", {})
    ]
    assert refs["root_lb_ports"] == {"10000": 1, "80": 1}

    # A failure: the stream ends in a failed Result (code 2) and the error; the object shows it.
    failed = _index(out, lambda v: isinstance(v, dict) and v.get("result", {}).get("code") == 2)
    assert out[failed - 1] == _result("Create requested")
    message = out[failed]["result"]["message"]
    assert message.startswith("Create ClusterInst failed: Cloudlet ") and "is in error" in message
    assert out[failed + 1] == {"error": {"code": 2, "message": message, "details": []}}
    shown = out[failed + 2]["result"]
    assert (shown["key"]["cluster_key"], shown["state"]) == ({"name": "batch"}, "CREATE_ERROR")
    assert shown["errors"] == [message.removeprefix("Create ClusterInst failed: ")]
    # ... and the retry, once the cloudlet is up again, reaches READY.
    retried = out.index(_result("Creating Heat Stack for batch"), failed)
    assert _result("Ready") in out[retried:]

    # A tenant-bound account sees acme's AppInsts only, and may not touch another developer's.
    added = out.index("added dana (operator, developer acme)")
    refused = _index(out, lambda v: isinstance(v, dict) and v.get("code") == 7, added)
    seen = [
        v["result"]["key"]["app_key"]["developer_key"]["name"] for v in out[added + 1 : refused]
    ]
    assert seen == ["acme"]
    assert out[refused]["message"].startswith("this account acts for developer 'acme'")

    # A missing reference: NOT_FOUND with a ResourceInfo naming it.
    missing = out[-1]
    assert missing["code"] == 5
    assert missing["details"][0]["@type"] == "type.googleapis.com/google.rpc.ResourceInfo"
    assert missing["details"][0]["resource_type"] == "edgeproto.App"
