"""The single overlay's pod, run here as the kubelet would run it (no cluster needed): a
read-only file system but for its volumes, its environment, its ports, its probes, its stop.

``unshare`` gives the pod mount and network namespaces of its own (root in a container may
make them; CI runs as root): its ports are its own, as in a pod, and nothing else on this
machine is reached. The one change: the data volume is mounted at a scratch folder, since this
machine has no /data, and PORTICO_DATA_DIR follows it (and password hashes are cheap).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, require
from tests.deploy.manifests import container, environment, one, ports, render

ADMIN_PASSWORD = "a-first-admin-password"
SECRETS = {("portico", "jwt-secret"): "s" * 48, ("portico", "admin-password"): ADMIN_PASSWORD}


def _can_unshare() -> bool:
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return False
    made = subprocess.run(
        ["unshare", "--mount", "--net", "true"], capture_output=True, check=False, timeout=30
    )
    return made.returncode == 0


@pytest.mark.slow
def test_the_single_pod_serves_its_probes_on_a_read_only_root_and_stops_in_time(
    tmp_path: Path,
) -> None:
    if not _can_unshare():
        require("unshare --mount --net", "the pod's namespaces need root (util-linux, iproute2)")
    manifests = render("single")
    portico = container(manifests)
    pod = one(manifests, "Deployment")["spec"]["template"]["spec"]
    env = environment(manifests, SECRETS)
    mounts = {m["mountPath"] for m in portico["volumeMounts"]}
    data = tmp_path / "data"
    data.mkdir()
    assert env["PORTICO_DATA_DIR"] in mounts and "/tmp" in mounts
    env["PORTICO_DATA_DIR"] = str(data)
    # The image's own environment (Dockerfile ENV) beside the manifest's; cheap password
    # hashes, as everywhere in the tests (the first admin's and the login's cost seconds).
    env |= {
        "PORTICO_PASSWORD_HASH_COST": "16",
        "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
        "HOME": str(data),
    }
    pre_stop = portico["lifecycle"]["preStop"]["sleep"]["seconds"]
    job = {
        "env": env,
        "cwd": str(ROOT),
        "volumes": ["/tmp"],  # the data folder is in it here
        # The checkout, the virtualenv, the interpreter's and the system's folders.
        "read_only": [str(ROOT), sys.prefix, sys.base_prefix, "/var/tmp", "/etc", "/root"],
        "ports": ports(manifests),
        "startup": portico["startupProbe"]["httpGet"]["path"],
        "readiness": portico["readinessProbe"]["httpGet"]["path"],
        "liveness": portico["livenessProbe"]["httpGet"]["path"],
        "admin_password": ADMIN_PASSWORD,
        "stop_seconds": pod["terminationGracePeriodSeconds"] - pre_stop,
    }
    result = subprocess.run(
        [
            "unshare",
            "--mount",
            "--net",
            "--propagation",
            "private",
            "--",
            sys.executable,
            "-m",
            "tests.deploy.pod_runner",
            json.dumps(job),
        ],
        cwd=ROOT,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True,
        text=True,
        check=False,
        timeout=180,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout.splitlines()[-1])
    log = report["log"]
    assert "error" not in report, f"{report['error']}\n{log}"
    # Nothing outside the volumes could be written, and Portico did not need to.
    assert set(report["refused_writes"].values()) == {"Read-only file system"}, report
    assert "Read-only file system" not in log and "Traceback" not in log, log
    assert report["probes"] == {
        "startup": 200,
        "readiness": 200,
        "liveness": 200,
        "login": 200,
        "metrics": 200,
        "grpc_health": "SERVING",
    }, log
    # What Portico wrote went to the data volume: the SQLite database among it.
    assert (data / "portico.db").is_file()
    # SIGTERM: drained and gone before the kubelet's SIGKILL would come.
    assert report["exit_code"] == 0, log
    assert report["stop_seconds"] < job["stop_seconds"]
